from __future__ import annotations

import logging

import pytest
import structlog
import torch


@pytest.fixture(autouse=True)
def _quiet_single_thread() -> None:
    """The fakes are tiny: one thread is fastest and makes runs bitwise reproducible."""
    torch.set_num_threads(1)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
