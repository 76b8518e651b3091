"""Thin Lambda handlers: parse the event, call the domain, return."""
