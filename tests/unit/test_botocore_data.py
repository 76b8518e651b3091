"""Every botocore session of a process reads botocore's data through one loader (local/botocore_data.py)."""

from __future__ import annotations

import botocore.session

from local.botocore_data import share_botocore_data


def test_sessions_share_one_loader_and_its_parsed_models() -> None:
    # Given the loader shared (as the test suite and the local stack do; applying it again is harmless)
    share_botocore_data()
    share_botocore_data()
    # When two sessions load the same service model
    first, second = botocore.session.Session(), botocore.session.Session()
    # Then they hold one loader, and the second session gets the model the first one parsed
    assert first.get_component("data_loader") is second.get_component("data_loader")
    assert first.get_service_data("dynamodb") is second.get_service_data("dynamodb")
