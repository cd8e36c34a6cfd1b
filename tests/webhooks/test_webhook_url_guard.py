"""The hostile URL catalogue: every entry is refused when saved and again at send, with no connection."""

import pytest
import urllib3.util.connection

from core.webhooks.transport import Transport, TransportSettings
from core.webhooks.urls import UnsafeURL, check_url
from tests.webhooks.webhook_receiver import FakeResolver

PUBLIC_V4 = "93.184.216.34"
PUBLIC_V6 = "2606:4700::1111"

RESOLVES = {
    "internal.example.test": [["10.1.2.3"]],
    "mixed.example.test": [[PUBLIC_V4, "127.0.0.1"]],
    "v6private.example.test": [["fd12:3456::1"]],
    "mapped.example.test": [["::ffff:192.168.0.1"]],
    "cgnat.example.test": [["100.64.1.1"]],
    "linklocal.example.test": [["169.254.10.10"]],
    "metadata-alias.example.test": [["169.254.169.254"]],
    "127.0.0.1.nip.io": [["127.0.0.1"]],
    "zero.example.test": [["0.0.0.0"]],
    "nat64.example.test": [["64:ff9b::a00:1"]],
    "garbage.example.test": [["not-an-ip"]],
    "hooks.example.test": [[PUBLIC_V4]],
    "v6hooks.example.test": [[PUBLIC_V6, PUBLIC_V4]],
}

HOSTILE_URLS = [
    "http://hooks.example.test/",  # not https
    "ftp://hooks.example.test/",
    "https://127.0.0.1/",
    "https://127.1/",  # short dotted form
    "https://2130706433/",  # decimal
    "https://0x7f000001/",  # hex
    "https://0177.0.0.1/",  # octal
    "https://0x7f.0.0.1/",
    "https://%31%32%37.0.0.1/",  # percent-encoded
    "https://\uff11\uff12\uff17.0.0.1/",  # full-width digits
    "https://[::1]/",
    "https://[::ffff:127.0.0.1]/",
    "https://[::ffff:7f00:1]/",
    "https://[::127.0.0.1]/",  # IPv4-compatible
    "https://[::ffff:0:a00:1]/",  # IPv4-translated 10.0.0.1
    "https://[64:ff9b::7f00:1]/",  # NAT64 of loopback
    "https://[2002:7f00:1::]/",  # 6to4 of loopback
    "https://[2002:a9fe:a9fe::]/",  # 6to4 of 169.254.169.254
    "https://0.0.0.0/",
    "https://0/",
    "https://[::]/",
    "https://169.254.169.254/latest/meta-data/",
    "https://[fd00:ec2::254]/",
    "https://metadata.google.internal/computeMetadata/v1/",
    "https://instance-data/",
    "https://10.0.0.1/",
    "https://172.16.5.4/",
    "https://192.168.1.1/",
    "https://100.64.0.1/",  # CGNAT
    "https://198.18.0.1/",  # benchmarking
    "https://192.0.0.8/",
    "https://224.0.0.1/",  # multicast
    "https://255.255.255.255/",
    "https://240.0.0.1/",  # reserved
    "https://[fe80::1]/",
    "https://[fc00::1]/",
    "https://[ff02::1]/",
    "https://localhost/",
    "https://app.localhost/",
    "https://printer.local/",
    "https://user:pass@hooks.example.test/",
    "https://hooks.example.test@127.0.0.1/",
    "https://hooks.example.test/#fragment",
    "https://internal.example.test/",
    "https://mixed.example.test/",  # one public and one loopback address
    "https://v6private.example.test/",
    "https://mapped.example.test/",
    "https://cgnat.example.test/",
    "https://linklocal.example.test/",
    "https://metadata-alias.example.test/",
    "https://127.0.0.1.nip.io/",
    "https://zero.example.test/",
    "https://nat64.example.test/",
    "https://garbage.example.test/",
    "https://nxdomain.example.test/",  # does not resolve
    "https://hooks.example.test:0/",
    "https://hooks.example.test:99999/",
    "https:///path-only",
    "https://bad_host!.example.test/",
    "https://hooks.example.test/\r\nX-Injected: 1",
]


@pytest.fixture
def no_connections(monkeypatch):
    opened = []

    def refuse(address, *args, **kwargs):
        opened.append(address)
        raise AssertionError(f"a connection to {address} was attempted")

    monkeypatch.setattr(urllib3.util.connection, "create_connection", refuse)
    return opened


def test_catalogue_is_large_enough():
    assert len(HOSTILE_URLS) >= 30


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_hostile_url_refused_on_save(url):
    with pytest.raises(UnsafeURL) as refused:
        check_url(url, resolver=FakeResolver(dict(RESOLVES)))
    assert refused.value.reason


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_hostile_url_refused_at_send_without_connecting(url, no_connections):
    transport = Transport(TransportSettings(), resolver=FakeResolver(dict(RESOLVES)))
    outcome = transport.post(url, {"X-Karibu-Event-Id": "evt_1"}, b"{}")
    assert not outcome.delivered
    assert outcome.error_class in {"blocked_address", "dns"}
    assert outcome.status_code is None
    assert no_connections == []


def test_second_resolution_turning_private_is_refused_at_send(no_connections):
    resolver = FakeResolver({"rebind.example.test": [[PUBLIC_V4], ["127.0.0.1"]]})
    target = check_url("https://rebind.example.test/hook", resolver=resolver)
    assert target.addresses == (PUBLIC_V4,)

    outcome = Transport(TransportSettings(), resolver=resolver).post("https://rebind.example.test/hook", {}, b"{}")
    assert outcome.error_class == "blocked_address"
    assert "127.0.0.1" in outcome.error
    assert resolver.lookups == ["rebind.example.test", "rebind.example.test"]
    assert no_connections == []


@pytest.mark.parametrize(
    "url, reason_part",
    [
        ("http://hooks.example.test/", "https"),
        ("https://internal.example.test/", "10.1.2.3 is a private address"),
        ("https://127.0.0.1/", "loopback"),
        ("https://169.254.169.254/", "metadata"),
        ("https://100.64.0.1/", "reserved or shared"),
        ("https://[::ffff:127.0.0.1]/", "embeds an IPv4 address"),
        ("https://2130706433/", "non-standard form"),
        ("https://nxdomain.example.test/", "could not be resolved"),
        ("https://user:pass@hooks.example.test/", "user name or password"),
    ],
)
def test_refusals_say_why(url, reason_part):
    with pytest.raises(UnsafeURL) as refused:
        check_url(url, resolver=FakeResolver(dict(RESOLVES)))
    assert reason_part in refused.value.reason


@pytest.mark.parametrize(
    "url, addresses",
    [
        ("https://hooks.example.test/karibu", (PUBLIC_V4,)),
        ("https://HOOKS.example.test./karibu?x=1", (PUBLIC_V4,)),
        ("https://v6hooks.example.test:8443/", (PUBLIC_V6, PUBLIC_V4)),
        (f"https://{PUBLIC_V4}/hook", (PUBLIC_V4,)),
        (f"https://[{PUBLIC_V6}]/hook", (PUBLIC_V6,)),
    ],
)
def test_public_targets_pass_and_pin_the_first_address(url, addresses):
    target = check_url(url, resolver=FakeResolver(dict(RESOLVES)))
    assert target.addresses == addresses
    assert target.pinned_address == addresses[0]


def test_allow_private_admits_loopback_and_private_but_never_metadata_or_unspecified():
    resolver = FakeResolver(dict(RESOLVES))
    for url in ("https://127.0.0.1:8443/", "https://localhost/", "https://internal.example.test/",
                "https://[::1]/", "https://192.168.1.1/"):
        if url == "https://localhost/":
            resolver.answers["localhost"] = [["127.0.0.1"]]
        assert check_url(url, allow_private=True, resolver=resolver).addresses
    for url in ("https://169.254.169.254/", "https://metadata.google.internal/", "https://0.0.0.0/",
                "https://[::ffff:169.254.169.254]/", "https://metadata-alias.example.test/", "https://224.0.0.1/"):
        with pytest.raises(UnsafeURL):
            check_url(url, allow_private=True, resolver=resolver)


def test_http_only_with_allow_http():
    resolver = FakeResolver(dict(RESOLVES))
    with pytest.raises(UnsafeURL, match="https"):
        check_url("http://hooks.example.test/", resolver=resolver)
    assert check_url("http://hooks.example.test/", allow_http=True, resolver=resolver).port == 80
