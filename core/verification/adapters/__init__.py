"""One adapter per registry. `ADAPTERS` maps a registry code to its adapter class."""
from core.verification.adapters.base import (  # noqa: F401
    RegistryAdapter, RegistryAnswer, RegistryEndpoint, RegistryUnavailable,
)
from core.verification.adapters.knec import KnecAdapter
from core.verification.adapters.nesa import NesaAdapter
from core.verification.adapters.uneb import UnebAdapter

ADAPTERS: dict[str, type[RegistryAdapter]] = {
    adapter.registry.code: adapter for adapter in (NesaAdapter, UnebAdapter, KnecAdapter)
}
