"""`trajhub.client`: the public name of the client (defined in trajhub.service.client)."""

from trajhub.service.client import *  # noqa: F403
from trajhub.service.client import __all__ as __all__
