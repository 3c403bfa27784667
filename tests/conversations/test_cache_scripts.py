"""The Lua scripts of ``conversations/cache.py`` against the real Redis (database 9, flushed before
each test): RESERVE, MERGE, SNAPSHOT, INSTALL, WINDOW, INVALIDATE and REMOVE, called through the
module's own functions, with the raw keys read back to see exactly what each script left behind.

No database and no broker: these scripts need neither.
"""

import json
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings

from conversations import cache

TENANT = "acme"
CONVERSATION = "c1"
TTL = 600


# --- Helpers ------------------------------------------------------------------------------------


def message(seq: int, **fields: Any) -> dict[str, Any]:
    return {"id": f"m{seq}", "seq": seq, "role": "user", "content": f"message {seq}", **fields}


def keys() -> cache.ConversationKeys:
    return cache.ConversationKeys.of(TENANT, CONVERSATION)


def redis() -> Any:
    return cache.client()


def redis_time_microseconds() -> int:
    seconds, microseconds = redis().time()
    return seconds * 1_000_000 + microseconds


def reserve(*, count: int = 1, token: str = "", lock_ms: int = 5000, seq_floor: int = 0) -> cache.Reservation | None:
    return cache.reserve(
        tenant_slug=TENANT, conversation_id=CONVERSATION, count=count, token=token, lock_ms=lock_ms, seq_floor=seq_floor
    )


def merge(messages: list[dict[str, Any]], *, mode: str = "pending", token: str = "") -> None:
    cache.merge(tenant_slug=TENANT, conversation_id=CONVERSATION, messages=messages, mode=mode, ttl=TTL, token=token)


def install(messages: list[dict[str, Any]], *, complete: bool = True, version: str | None = None) -> bool:
    return cache.install(
        tenant_slug=TENANT,
        conversation_id=CONVERSATION,
        version=current_version() if version is None else version,
        messages=messages,
        complete=complete,
        ttl=TTL,
    )


def window(count: int) -> cache.CachedWindow | None:
    return cache.window(tenant_slug=TENANT, conversation_id=CONVERSATION, count=count)


def current_version() -> str:
    value = redis().hget(keys().state, "version")
    return "0" if value is None else value.decode()


def last_seq() -> int:
    return int(redis().hget(keys().state, "last_seq") or 0)


def raw_list() -> list[str]:
    """Every element of the cached list, header included (test lists are small)."""
    return [element.decode() for element in redis().lrange(keys().messages, 0, -1)]


def listed_seqs() -> list[int]:
    """The seqs of the cached list, header (seq 0) included."""
    return [json.loads(element)["seq"] for element in raw_list()]


def pending_ids() -> set[str]:
    return {key.decode() for key in redis().hkeys(keys().pending)}


def stored_message(message_id: str) -> dict[str, Any] | None:
    value = redis().get(cache.message_key(TENANT, CONVERSATION, message_id))
    return None if value is None else json.loads(value)


# --- Message shape --------------------------------------------------------------------------------


def test_a_message_is_serialised_with_its_seq_first_so_the_scripts_can_read_the_order():
    text = cache.message_json({"content": "¿qué tal?", "id": "x", "seq": 42, "role": "user"})

    assert text.startswith('{"seq":42,')
    assert json.loads(text) == {"content": "¿qué tal?", "id": "x", "seq": 42, "role": "user"}
    assert "¿qué tal?" in text  # UTF-8 as is, not escaped


def test_the_list_header_is_recognised_and_says_whether_the_list_is_complete():
    assert cache.is_header(cache.header_json(complete=True))
    assert cache.is_header(cache.header_json(complete=False))
    assert json.loads(cache.header_json(complete=False)) == {"seq": 0, "complete": False}
    assert not cache.is_header(cache.message_json(message(7)))


def test_every_key_of_a_conversation_shares_its_prefix_and_a_hash_tag_wraps_it_for_redis_cluster():
    assert cache.key("acme", "c1", "messages") == "acme:c1:messages"
    assert cache.message_key("acme", "c1", "abc") == "acme:c1:message:abc"
    with override_settings(MEMORY_REDIS_HASH_TAGS=True):
        assert cache.key("acme", "c1", "messages") == "{acme:c1}:messages"
        assert cache.ConversationKeys.of("acme", "c1").pending == "{acme:c1}:pending"


# --- RESERVE --------------------------------------------------------------------------------------


def test_reserve_hands_out_a_seq_from_the_redis_clock_in_microseconds():
    before = redis_time_microseconds()
    reservation = reserve()
    after = redis_time_microseconds()

    assert reservation is not None
    assert before <= reservation.first_seq <= after
    assert last_seq() == reservation.first_seq


def test_reserve_hands_out_strictly_increasing_seqs():
    seqs = [reserve().first_seq for _ in range(200)]

    assert all(earlier < later for earlier, later in zip(seqs, seqs[1:], strict=False))


def test_a_batch_reservation_owns_every_seq_up_to_its_count():
    batch = reserve(count=50)
    following = reserve()

    assert last_seq() == following.first_seq
    assert following.first_seq >= batch.first_seq + 50


def test_reserve_keeps_increasing_after_redis_loses_the_state_hash():
    seqs = []
    for _ in range(100):
        seqs.append(reserve().first_seq)
        redis().delete(keys().state)  # a Redis restart forgets version and last seq

    assert all(earlier < later for earlier, later in zip(seqs, seqs[1:], strict=False))


def test_reserve_never_hands_out_a_seq_at_or_below_the_floor():
    floor = redis_time_microseconds() + 3_600_000_000  # an hour ahead of the Redis clock

    reservation = reserve(seq_floor=floor)

    assert reservation.first_seq == floor + 1
    assert reserve().first_seq == floor + 2


def test_reserve_says_whether_the_conversation_list_is_cached():
    assert reserve().cached is False

    install([])

    assert reserve().cached is True


def test_reserve_returns_none_while_another_appender_holds_the_lock():
    first = reserve(token="first")
    seq_after_first = last_seq()

    assert first is not None
    assert reserve(token="second") is None
    assert last_seq() == seq_after_first  # the refused reservation took no seq


def test_the_append_lock_expires_by_itself():
    reserve(token="first", lock_ms=1500)

    assert 0 < redis().pttl(keys().lock) <= 1500


def test_only_the_holder_releases_the_append_lock():
    reserve(token="first")

    cache.release(tenant_slug=TENANT, conversation_id=CONVERSATION, token="someone-else")
    assert reserve(token="second") is None

    cache.release(tenant_slug=TENANT, conversation_id=CONVERSATION, token="first")
    assert reserve(token="second") is not None


def test_the_merge_of_the_lock_holder_releases_the_append_lock():
    reservation = reserve(token="first")
    merge([message(reservation.first_seq)], token="someone-else")
    assert reserve(token="second") is None

    merge([message(reservation.first_seq)], token="first")
    assert reserve(token="second") is not None


def test_a_reservation_without_a_token_ignores_the_append_lock():
    reserve(token="first")

    assert reserve(token="") is not None  # memory revisions need a seq, not the lock
    assert reserve(token="second") is None


# --- MERGE ------------------------------------------------------------------------------------------


def test_a_pending_write_is_recorded_with_its_message_key_and_bumps_the_version():
    install([message(10)])
    version = int(current_version())

    merge([message(20)])

    assert listed_seqs() == [0, 10, 20]
    assert pending_ids() == {"m20"}
    assert stored_message("m20") == message(20)
    assert int(current_version()) > version


def test_a_pending_write_to_an_uncached_conversation_is_recorded_without_creating_the_list():
    merge([message(20)])

    assert not redis().exists(keys().messages)
    assert pending_ids() == {"m20"}
    assert stored_message("m20") == message(20)
    assert int(current_version()) > 0


def test_merge_places_an_out_of_order_message_in_seq_order():
    install([message(10), message(30)])

    merge([message(20)])
    merge([message(5)])
    merge([message(40)])

    assert listed_seqs() == [0, 5, 10, 20, 30, 40]


def test_merge_places_a_message_in_seq_order_however_far_back_it_belongs():
    # The script scans the list from its tail 64 elements at a time: cross those boundaries.
    install([message(seq) for seq in range(100, 20_100, 100)])  # 200 messages
    for depth in (1, 2, 62, 63, 64, 65, 66, 127, 128, 129, 130, 199, 200):
        newest_first = [seq for seq in listed_seqs() if seq][::-1]
        merge([message(newest_first[depth - 1] - 1)])

    seqs = listed_seqs()
    assert len(seqs) == 1 + 200 + 13
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == len(seqs)


def test_merge_ignores_a_message_already_in_the_list():
    install([message(10), message(20), message(30)])

    merge([message(20)])
    merge([message(30)])

    assert listed_seqs() == [0, 10, 20, 30]


def test_merge_of_a_batch_places_every_message_and_counts_as_one_change():
    install([message(10)])
    version = int(current_version())

    merge([message(20), message(15), message(30)])

    assert listed_seqs() == [0, 10, 15, 20, 30]
    assert pending_ids() == {"m20", "m15", "m30"}
    assert int(current_version()) > version


def test_settling_a_pending_message_already_in_the_list_removes_it_from_pending_and_keeps_the_version():
    install([])
    merge([message(10)])
    version = current_version()

    merge([message(10)], mode="settled")

    assert pending_ids() == set()
    assert listed_seqs() == [0, 10]
    assert current_version() == version  # nothing a concurrent rebuild could have missed


def test_settling_a_pending_message_of_an_uncached_conversation_keeps_the_version():
    merge([message(10)])
    version = current_version()

    merge([message(10)], mode="settled")

    assert pending_ids() == set()
    assert current_version() == version
    assert not redis().exists(keys().messages)


def test_settling_a_message_the_cache_never_saw_places_it_and_bumps_the_version():
    install([message(10), message(30)])
    version = int(current_version())

    merge([message(20)], mode="settled")

    assert listed_seqs() == [0, 10, 20, 30]
    assert pending_ids() == set()
    assert stored_message("m20") == message(20)
    assert int(current_version()) > version


def test_a_pending_merge_after_the_worker_already_settled_the_message_leaves_nothing_pending():
    install([])
    merge([message(10)], mode="settled")  # the worker ran before the web process recorded the write

    merge([message(10)])

    assert pending_ids() == set()
    assert listed_seqs() == [0, 10]


def test_settling_a_message_missing_from_pending_bumps_the_version_even_without_a_list():
    merge([message(10)], mode="settled")  # Redis lost the pending write: a rebuild may have missed it

    assert int(current_version()) > 0


def test_merge_trims_the_list_to_the_limit_keeping_the_header_and_marking_it_incomplete():
    install([message(10), message(20), message(30)])

    with override_settings(MEMORY_CACHE_LIST_LIMIT=3):
        merge([message(40)])
        assert listed_seqs() == [0, 20, 30, 40]
        assert json.loads(raw_list()[0]) == {"seq": 0, "complete": False}

        merge([message(50), message(60), message(70)])
        assert listed_seqs() == [0, 50, 60, 70]
        assert json.loads(raw_list()[0]) == {"seq": 0, "complete": False}

    assert pending_ids() == {"m40", "m50", "m60", "m70"}  # trimmed from the list, not forgotten


def test_a_list_within_the_limit_stays_complete():
    install([message(10)])

    with override_settings(MEMORY_CACHE_LIST_LIMIT=3):
        merge([message(20), message(30)])

    assert listed_seqs() == [0, 10, 20, 30]
    assert json.loads(raw_list()[0]) == {"seq": 0, "complete": True}


def test_a_message_older_than_the_tail_of_an_incomplete_list_is_not_inserted():
    install([message(40), message(50), message(60)], complete=False)

    merge([message(30)])

    assert listed_seqs() == [0, 40, 50, 60]  # it belongs to the part only PostgreSQL holds
    assert pending_ids() == {"m30"}  # still pending for a rebuild or a database read
    assert stored_message("m30") == message(30)

    merge([message(45)])

    assert listed_seqs() == [0, 40, 45, 50, 60]


def test_a_message_older_than_everything_in_a_complete_list_goes_first():
    install([message(40), message(50)], complete=True)

    merge([message(30)])

    assert listed_seqs() == [0, 30, 40, 50]


def test_merge_refreshes_the_time_to_live_of_the_list_and_the_message():
    install([])
    redis().expire(keys().messages, 5)

    merge([message(10)])

    assert redis().ttl(keys().messages) > 5
    assert 0 < redis().ttl(cache.message_key(TENANT, CONVERSATION, "m10")) <= TTL


# --- SNAPSHOT and INSTALL -------------------------------------------------------------------------


def test_snapshot_reads_the_version_the_pending_writes_and_the_last_seq_together():
    reservation = reserve(count=2)
    merge([message(reservation.first_seq), message(reservation.first_seq + 1)])

    taken = cache.snapshot(tenant_slug=TENANT, conversation_id=CONVERSATION)

    assert taken.version == current_version() != "0"
    assert sorted(taken.pending, key=lambda m: m["seq"]) == [message(reservation.first_seq), message(reservation.first_seq + 1)]
    assert taken.last_seq == reservation.first_seq + 1


def test_a_snapshot_of_an_unknown_conversation_is_empty():
    taken = cache.snapshot(tenant_slug=TENANT, conversation_id=CONVERSATION)

    assert (taken.version, taken.pending, taken.last_seq) == ("0", [], 0)


def test_install_replaces_the_list_atomically_and_bumps_the_version():
    install([message(10), message(20)])
    version = int(current_version())

    assert install([message(30)], complete=False)

    assert listed_seqs() == [0, 30]
    assert json.loads(raw_list()[0]) == {"seq": 0, "complete": False}
    assert int(current_version()) > version
    assert 0 < redis().ttl(keys().messages) <= TTL


def test_install_is_refused_when_the_version_moved_since_the_snapshot():
    install([message(10)])
    taken = cache.snapshot(tenant_slug=TENANT, conversation_id=CONVERSATION)
    merge([message(20)])  # a write the snapshot did not see

    assert install([message(10)], version=taken.version) is False

    assert listed_seqs() == [0, 10, 20]


def test_install_raises_the_last_seq_but_never_lowers_it():
    install([message(10)])
    assert last_seq() == 10

    install([message(10), message(5_000)])
    assert last_seq() == 5_000

    install([message(10)])
    assert last_seq() == 5_000


def test_install_of_an_empty_conversation_leaves_a_header_alone():
    assert install([])

    assert raw_list() == [cache.header_json(complete=True)]


def test_install_of_a_long_list_keeps_every_message_in_order():
    messages = [message(seq) for seq in range(1, 2_502)]  # more than one RPUSH batch of 1000

    install(messages)

    assert listed_seqs() == [0, *range(1, 2_502)]


# --- WINDOW ---------------------------------------------------------------------------------------


def test_window_is_none_on_a_miss():
    merge([message(10)])  # pending, but nothing cached

    assert window(10) is None


def test_window_returns_the_newest_messages_oldest_first_and_completeness_only_from_the_header():
    install([message(seq) for seq in (10, 20, 30, 40, 50)])

    newest = window(3)

    assert [m["seq"] for m in newest.messages] == [30, 40, 50]
    assert newest.complete is False  # the read did not reach the header: it cannot tell
    assert newest.messages[-1] == message(50)
    assert window(5).complete is True


def test_window_asking_for_more_than_the_list_holds_returns_every_message_without_the_header():
    install([message(10), message(20)], complete=False)

    everything = window(100)

    assert [m["seq"] for m in everything.messages] == [10, 20]
    assert everything.complete is False


def test_the_window_of_an_empty_cached_conversation_is_empty_not_a_miss():
    install([])

    empty = window(10)

    assert (empty.complete, empty.messages) == (True, [])


def test_a_window_reaching_the_start_of_a_long_list_leaves_out_only_the_header():
    install([message(seq) for seq in range(1, 11)])

    assert [m["seq"] for m in window(10).messages] == list(range(1, 11))
    assert [m["seq"] for m in window(9).messages] == list(range(2, 11))
    assert [m["seq"] for m in window(11).messages] == list(range(1, 11))


def test_a_window_miss_without_a_token_takes_no_rebuild_lock():
    assert window(10) is None

    assert redis().exists(keys().rebuild) == 0


def window_or_lock(token: str) -> cache.CachedWindow | cache.WindowMiss:
    return cache.window_or_rebuild_lock(tenant_slug=TENANT, conversation_id=CONVERSATION, count=10, token=token)


def test_a_window_miss_takes_the_rebuild_lock_and_reads_the_snapshot_in_the_same_script():
    reservation = reserve(count=2)
    merge([message(reservation.first_seq), message(reservation.first_seq + 1)])  # pending, nothing cached

    missed = window_or_lock("reader-1")

    assert isinstance(missed, cache.WindowMiss)
    assert missed.locked is True
    assert redis().get(keys().rebuild) == b"reader-1"
    assert 0 < redis().ttl(keys().rebuild) <= settings.MEMORY_REBUILD_LOCK_TTL
    assert missed.snapshot == cache.snapshot(tenant_slug=TENANT, conversation_id=CONVERSATION)
    assert sorted(m["seq"] for m in missed.snapshot.pending) == [reservation.first_seq, reservation.first_seq + 1]


def test_a_second_reader_missing_gets_the_snapshot_but_not_the_lock():
    merge([message(10)])
    window_or_lock("reader-1")

    second = window_or_lock("reader-2")

    assert isinstance(second, cache.WindowMiss)
    assert second.locked is False
    assert second.snapshot.pending == [message(10)]
    assert redis().get(keys().rebuild) == b"reader-1"


def test_a_window_hit_takes_no_rebuild_lock():
    install([message(10)])

    found = window_or_lock("reader-1")

    assert (found.complete, found.messages) == (True, [message(10)])
    assert redis().exists(keys().rebuild) == 0


def test_a_list_cached_between_the_read_and_the_miss_script_is_the_window_without_the_lock(monkeypatch):
    # The plain read finds no list; a writer installs one before the miss script runs: the script
    # answers the window itself (newest first-count messages, no header) and takes no lock.
    install([message(seq) for seq in range(10, 22)], complete=False)
    monkeypatch.setattr(cache, "window", lambda **_: None)

    found = window_or_lock("reader-1")

    assert isinstance(found, cache.CachedWindow)
    assert found.complete is False
    assert [m["seq"] for m in found.messages] == list(range(12, 22))
    assert found.elements[0].startswith(b'{"seq":12,')
    assert redis().exists(keys().rebuild) == 0


def test_a_window_count_below_one_is_refused():
    with pytest.raises(ValueError, match="count=0"):
        window(0)


@pytest.mark.parametrize("refused", [False, True], ids=["installed", "refused"])
def test_install_with_the_rebuild_token_releases_the_rebuild_lock_installed_or_refused(refused):
    missed = window_or_lock("reader-1")
    if refused:
        merge([message(20)])  # a write the snapshot did not see: the version moved

    installed = cache.install(
        tenant_slug=TENANT,
        conversation_id=CONVERSATION,
        version=missed.snapshot.version,
        messages=[message(10)],
        complete=True,
        ttl=TTL,
        rebuild_token="reader-1",
    )

    assert installed is not refused
    assert redis().exists(keys().rebuild) == 0


def test_install_leaves_alone_a_rebuild_lock_held_with_another_token():
    window_or_lock("reader-1")

    install([message(10)])
    cache.install(
        tenant_slug=TENANT,
        conversation_id=CONVERSATION,
        version=current_version(),
        messages=[message(10)],
        complete=True,
        ttl=TTL,
        rebuild_token="reader-2",
    )

    assert redis().get(keys().rebuild) == b"reader-1"


# --- The message JSON -----------------------------------------------------------------------------


def encoded_as_the_scripts_read_it(message: dict[str, Any]) -> str:
    """``seq`` first, then every other member with sorted keys, compact, non-ASCII kept as is."""
    rest = {name: value for name, value in message.items() if name != "seq"}
    return f'{{"seq":{int(message["seq"])},' + json.dumps(rest, separators=(",", ":"), ensure_ascii=False, sort_keys=True)[1:]


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"content": 'quotes " and \\ backslashes, \n newlines \t tabs \x00\x1f\x7f controls'},
        {"content": "non-ASCII: é € 😀 \u2028 and a / slash", "id": "ñ-1"},
        {"metadata": {"zeta": 1, "alpha": {"y": [1.5, None, True, "é"], "b": 2}}},
        {"metadata": None},
        {"metadata": ["a", 2.5]},
        {"token_count": True},  # a bool is not an int here: written as JSON true
        {"seq": "42"},
        {"extra": "a member the message shape does not have"},
    ],
)
def test_message_json_writes_seq_first_and_every_other_member_sorted_and_compact(fields):
    stored = {
        "id": "0b3f7c1e-6a8e-4a47-9d55-3cbd2f8e9a10",
        "seq": 1_740_266_205_871_521,
        "role": "assistant",
        "content": "plain text",
        "metadata": {},
        "created_at": "2025-02-22T23:16:45.871521+00:00",
        "token_count": 3,
    } | fields

    assert cache.message_json(stored) == encoded_as_the_scripts_read_it(stored)


# --- INVALIDATE and REMOVE ------------------------------------------------------------------------


def test_invalidate_drops_the_list_but_keeps_pending_writes_and_seqs_and_bumps_the_version():
    reservation = reserve()
    install([])
    merge([message(reservation.first_seq)])
    version = int(current_version())

    cache.invalidate(tenant_slug=TENANT, conversation_id=CONVERSATION)

    assert window(10) is None
    assert pending_ids() == {f"m{reservation.first_seq}"}
    assert last_seq() == reservation.first_seq
    assert int(current_version()) > version
    assert stored_message(f"m{reservation.first_seq}") is not None


def test_remove_deletes_a_message_from_the_list_the_pending_writes_and_its_key():
    install([message(10)])
    merge([message(20), message(30)])
    version = int(current_version())

    cache.remove(tenant_slug=TENANT, conversation_id=CONVERSATION, message=message(20))

    assert listed_seqs() == [0, 10, 30]
    assert pending_ids() == {"m30"}
    assert stored_message("m20") is None
    assert stored_message("m30") is not None
    assert int(current_version()) > version


def test_remove_leaves_alone_another_copy_stored_under_the_same_id():
    install([])
    merge([message(20)])

    # The losing copy of a resent id: same id, another seq.
    cache.remove(tenant_slug=TENANT, conversation_id=CONVERSATION, message=message(20) | {"seq": 25})

    assert listed_seqs() == [0, 20]
    assert pending_ids() == {"m20"}
    assert stored_message("m20") == message(20)


@pytest.mark.parametrize("cached", [True, False], ids=["cached", "uncached"])
def test_remove_of_a_message_the_cache_does_not_hold_changes_nothing_but_the_version(cached):
    if cached:
        install([message(10)])
    version = int(current_version())

    cache.remove(tenant_slug=TENANT, conversation_id=CONVERSATION, message=message(99))

    assert listed_seqs() == ([0, 10] if cached else [])
    assert int(current_version()) > version


# --- The erase floor ------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["erase", "clear"])
def test_a_settle_older_than_an_erase_or_clear_writes_nothing_back_and_a_newer_one_is_cached(how):
    install([message(1)])
    merge([message(2)])  # acknowledged, pending
    if how == "erase":
        cache.erase(tenant_slug=TENANT, conversation_id=CONVERSATION, erased_before=10)
    else:
        cache.clear_messages(tenant_slug=TENANT, conversation_id=CONVERSATION, token="", erased_before=10)
    install([])
    merge([message(2)], mode="settled")  # a worker that committed before the erase settles after it
    merge([message(11)], mode="settled")  # the conversation's first message after it

    assert redis().get(cache.message_key(TENANT, CONVERSATION, "m2")) is None
    assert redis().hgetall(keys().pending) == {}
    listed = [json.loads(item)["seq"] for item in redis().lrange(keys().messages, 1, -1)]
    assert listed == [11]
    assert redis().get(cache.message_key(TENANT, CONVERSATION, "m11")) is not None


@pytest.mark.parametrize("hash_tags", [False, True])
def test_the_erase_floor_names_the_conversation_by_a_keyed_digest_only(hash_tags, settings):
    """What an erase leaves in Redis neither holds the id nor lets a guessed id be confirmed by
    hashing it: the digest is keyed with the deployment's secret, and under Redis Cluster's hash
    tags the key sits in the conversation's slot without carrying its tag."""
    import hashlib

    from redis.crc import key_slot

    settings.MEMORY_REDIS_HASH_TAGS = hash_tags
    conversation_id = "alice-session-1"
    cache.merge(tenant_slug=TENANT, conversation_id=conversation_id, messages=[message(1)], mode="pending", ttl=TTL, token="")
    cache.erase(tenant_slug=TENANT, conversation_id=conversation_id, erased_before=5)

    floor = cache.erase_floor_key(TENANT, conversation_id)
    left = [key.decode() for key in redis().scan_iter() if key.decode() != cache.LEDGER_KEY]
    assert left == [floor]
    assert "alice" not in floor
    assert hashlib.sha256(conversation_id.encode()).hexdigest() not in floor  # a guess cannot be confirmed
    if hash_tags:
        assert key_slot(floor.encode()) == key_slot(cache.key(TENANT, conversation_id, "state").encode())
    settings.MEMORY_TOMBSTONE_KEYS = ["another secret"]
    assert cache.erase_floor_key(TENANT, conversation_id) != floor  # the deployment's secret keys it
