"""The outbox engine shared by webhook deliveries and messages: clock, retry schedule, leases, drain and sweep."""
