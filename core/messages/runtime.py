"""Process-wide pieces of the message engine; tests replace `runtime.clock` to walk the retry schedule."""
from __future__ import annotations

from dataclasses import dataclass, field

from core.outbox.schedule import Clock, SystemClock


@dataclass
class MessageRuntime:
    clock: Clock = field(default_factory=SystemClock)


runtime = MessageRuntime()
