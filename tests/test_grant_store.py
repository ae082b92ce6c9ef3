"""The grant store's bookkeeping (pure logic, no server): hashes only, restart, bounds, expiry, names."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from jupyter_pair_mcp.services.grant_records import Pending, clean_name, normalize_folder
from jupyter_pair_mcp.services.grants import GrantStore


def pending(store: GrantStore, client: str = "c1") -> str:
    store.add_client(client, {"client_id": client, "redirect_uris": ["http://127.0.0.1:9/cb"]})
    request = Pending(
        id=f"p-{client}-{time.monotonic_ns()}",
        client_id=client,
        client_name="Agent",
        redirect_uri="http://127.0.0.1:9/cb",
        redirect_uri_explicit=True,
        state="s",
        code_challenge="x" * 43,
        resource="http://127.0.0.1:8888/mcp",
        created=time.time(),
    )
    store.begin(request)
    return request.id


def approve(store: GrantStore, person: str = "alice", client: str = "c1", lifetime: float = 3600.0) -> str:
    _, code = store.approve(
        pending(store, client),
        person=person,
        person_name=person,
        level="write",
        folders=["work"],
        propose_only=False,
        lifetime=lifetime,
    )
    return code


def test_tokens_are_stored_hashed_and_survive_a_restart(tmp_path: Path) -> None:
    path = str(tmp_path / "grants.json")
    store = GrantStore(path)
    grant, access, refresh = store.redeem(approve(store))
    stored = Path(path).read_text()
    assert access not in stored and refresh not in stored
    assert json.loads(stored)["clients"].keys() == {"c1"}  # the client a grant uses is kept with it
    again = GrantStore(path)
    assert again.by_access(access) is not None and again.by_access(access).id == grant.id  # type: ignore[union-attr]
    assert again.by_refresh(refresh) is not None
    assert again.by_access(refresh) is None and again.by_refresh(access) is None


def test_a_code_works_once_and_a_refresh_token_once(tmp_path: Path) -> None:
    store = GrantStore(str(tmp_path / "g.json"))
    code = approve(store)
    _, _access, refresh = store.redeem(code)
    with pytest.raises(KeyError):
        store.redeem(code)
    _, access2, refresh2 = store.rotate(refresh)
    with pytest.raises(KeyError):
        store.rotate(refresh)
    assert store.by_access(access2) is not None and store.by_refresh(refresh2) is not None


def test_expired_tokens_and_grants_are_refused(tmp_path: Path) -> None:
    store = GrantStore(str(tmp_path / "g.json"), access_ttl=3600)
    grant, access, _ = store.redeem(approve(store))
    grant.access = {h: time.time() - 1 for h in grant.access}
    assert store.by_access(access) is None
    grant2, access2, refresh2 = store.redeem(approve(store, client="c2"))
    grant2.expires = time.time() - 1
    assert store.by_access(access2) is None and store.by_refresh(refresh2) is None


def test_bounded_per_person_and_revocation(tmp_path: Path) -> None:
    store = GrantStore(str(tmp_path / "g.json"), max_per_person=2)
    for _ in range(3):
        approve(store, person="alice")
    approve(store, person="bob")
    assert len(store.of_person("alice")) == 2 and len(store.of_person("bob")) == 1
    (bobs,) = store.of_person("bob")
    assert store.revoke(bobs.id) and not store.revoke(bobs.id)


def test_revocations_are_told_with_who_did_them_and_expiry_is_not(tmp_path: Path) -> None:
    store = GrantStore(str(tmp_path / "g.json"), max_per_person=1)
    told: list[tuple[str, str]] = []
    store.on_revoke(lambda grant, by: told.append((grant.id, by)))
    store.on_revoke(lambda grant, by: 1 / 0)  # a failing listener does not keep the grant nor stop the others
    approve(store, person="alice")
    (first,) = store.of_person("alice")
    approve(store, person="alice")  # past max_per_person: the first is revoked
    (second,) = store.of_person("alice")
    assert told == [(first.id, "the limit of grants per person (max_grants_per_person)")]
    assert store.revoke(second.id, by="alice") and told[-1] == (second.id, "alice")
    approve(store, person="bob")
    (bobs,) = store.of_person("bob")
    bobs.expires = time.time() - 1
    store.save()  # expired grants are dropped here: nothing was revoked
    assert store.grants == {} and len(told) == 2


def test_registrations_alone_are_not_written(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    store = GrantStore(str(path))
    pending(store, "nobody")
    approve(store, client="used")
    assert json.loads(path.read_text())["clients"].keys() == {"used"}


def test_names_and_folders() -> None:
    assert clean_name("Claude\u202e edoC\x1b[31m\n  x" + "y" * 100) == ("Claude edoC[31m x" + "y" * 100)[:64]
    assert clean_name("\u2066\u2069") == "MCP client"
    assert normalize_folder("/work//data/") == "work/data"
    with pytest.raises(ValueError, match="not a path"):
        normalize_folder("work/../etc")
