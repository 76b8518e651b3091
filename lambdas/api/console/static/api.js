// The API client: every console action is one of these calls, to the JSON API of the page's origin.

/** What precedes `/console` in the page's path: "" locally, "/v1" behind API Gateway's stage URL. */
export function apiBase(pathname) {
  const path = pathname.replace(/\/+$/, "");
  const at = path.lastIndexOf("/console");
  return at >= 0 ? path.slice(0, at) : "";
}

const API = apiBase(window.location.pathname);

/** A refused or failed API call: the API's `{error, message, field}` and the HTTP status. */
class ApiError extends Error {
  constructor(status, body) {
    super(body.message);
    this.status = status;
    this.code = body.error;
    this.field = body.field ?? null;
  }
}

/** One API call; resolves to {status, data} on 2xx, rejects with an ApiError otherwise. */
export async function api(method, path, { body, version } = {}) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (version !== undefined) headers["If-Match"] = `"${version}"`;
  let response;
  try {
    response = await fetch(`${API}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
    });
  } catch (error) {
    const message = `network: the API did not answer (${error.message})`;
    throw new ApiError(0, { error: "network", message });
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const known = data && typeof data === "object" && typeof data.message === "string";
    throw new ApiError(
      response.status,
      known ? data : {
        error: `http_${response.status}`,
        message: `HTTP ${response.status}: ${text || response.statusText}`,
      },
    );
  }
  return { status: response.status, data };
}
