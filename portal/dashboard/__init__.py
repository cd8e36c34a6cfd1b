"""The overview pages: the dashboard with its chart of applications per day, and the cycles with their programs."""
# The views register on `portal.bp`.
from portal.dashboard import cycles, test_data, views  # noqa: F401
