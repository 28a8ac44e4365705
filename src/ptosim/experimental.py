"""``pypto.experimental``: the operation options (``combine_axis``)."""

from .config import get_operation_options, set_operation_options

__all__ = ["set_operation_options", "get_operation_options"]
