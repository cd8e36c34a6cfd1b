"""Events: emitted in the transaction of the change that caused them, and the feed that partners poll."""
