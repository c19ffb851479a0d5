"""Issue 18 row 17: request and item ids after `os.fork()` differ between parent and child (a server that
forks its workers after import), and they come from the OS CSPRNG, not a seeded generator."""

from __future__ import annotations

import os
import uuid

from inference.response import new_item_id, new_uuid


def _ids_in_child() -> set[str]:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: write its ids and leave without running pytest's teardown
        try:
            os.close(read_end)
            data = "\n".join([str(new_uuid()) for _ in range(300)] + [new_item_id("msg") for _ in range(300)])
            os.write(write_end, data.encode())
        finally:
            os._exit(0)
    os.close(write_end)
    chunks = []
    while chunk := os.read(read_end, 65536):
        chunks.append(chunk)
    os.close(read_end)
    os.waitpid(pid, 0)
    return set(b"".join(chunks).decode().split("\n"))


def test_parent_and_child_never_share_ids():
    new_uuid()  # the parent has drawn ids (and filled its buffer) before the fork
    child = _ids_in_child()
    parent = {str(new_uuid()) for _ in range(300)} | {new_item_id("msg") for _ in range(300)}
    assert len(child) == 600 and len(parent) == 600
    assert not child & parent


def test_ids_are_random_version_4_uuids():
    ids = [new_uuid() for _ in range(1000)]
    assert len(set(ids)) == 1000
    assert all(isinstance(i, uuid.UUID) and i.version == 4 for i in ids)
    assert len(new_item_id("fc")) == len("fc_") + 32
