"""Notes shared by several server processes: one mcp_min server per process (one granian
backend each, behind HAProxy, as docs/http.md "Several processes and machines" shows),
the notes in one SQLite database in WAL mode, and every change told to every process
over a Redis pub/sub channel, so that a client listening on one process hears of a
change made through another.

    pip install granian redis
    redis-server --port 6379 --save '' --appendonly no &
    export MCP_MIN_STATE_KEY=$(openssl rand -hex 32) NOTES_DB=$PWD/notes.db \\
           REDIS_URL=redis://127.0.0.1:6379/0
    cd examples
    granian --interface wsgi --workers 1 --port 8001 scale_out_server:server &
    granian --interface wsgi --workers 1 --port 8002 scale_out_server:server &
    haproxy -f haproxy.cfg            # docs/http.md's configuration: clients use :8000

How a change travels. A tool writes the note and, in the same transaction, appends the
change to the `changes` table, whose ids order the changes of every process. Once that
is committed, it publishes them on the channel as [[id, kind, what], ...]. Each
process's relay thread (started by the lifespan) hands what it hears to its own Server
(notify_resource_updated, notify_list_changed), which tells the clients listening there:
the publisher's own process hears it the same way.

When Redis goes away. Pub/sub keeps nothing for a subscriber that is not connected, so
the log is what counts. A tool whose publish fails still succeeds (its change is in the
log) and the first such failure is logged. The relay logs that it lost Redis, tries
again (at most RETRY_MAX seconds apart), and once subscribed again hands on every change
in the log past the last one it handed on, in order, saying how many: the changes made
while Redis was away are replayed, each distinct one once. It also reads the log when a
message skips an id (that change's publish failed, or is still on its way) and when the
channel has been quiet for SWEEP seconds. A relay that fell more than KEEP changes
behind (the log keeps that many) cannot replay: it tells its listeners to read
everything again instead (resources/list_changed, and an update of every note).
"""

import contextlib
import json
import logging
import os
import re
import sqlite3
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# pip install redis: this example's dependency, never mcp_min's
import redis  # noqa: E402
from redis.backoff import NoBackoff  # noqa: E402
from redis.retry import Retry  # noqa: E402

from mcp_min import JSONRPCError, ResourceNotFound, Server, ToolError  # noqa: E402

DATABASE = os.environ.get("NOTES_DB", "notes.db")
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
CHANNEL = "mcp-min-notes"
KEEP = 10_000          # changes the log keeps: how far behind a relay can replay from
SWEEP = 5.0            # seconds of a quiet channel, then the relay reads the log
RETRY_MAX = 2.0        # the longest wait between two attempts to reach Redis
MAX_NOTES = 10_000
MAX_TEXT = 64 << 10    # characters of one note
PAGE = 100             # notes per resources/list page
NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")

log = logging.getLogger("notes")
if not log.handlers:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter("notes[%(process)d] %(levelname)s: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False

# -- the shared data -----------------------------------------------------------------
SCHEMA = """
CREATE TABLE IF NOT EXISTS notes (name TEXT PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS changes (id INTEGER PRIMARY KEY AUTOINCREMENT,
                                    kind TEXT NOT NULL, what TEXT NOT NULL);
"""
local = threading.local()


def db():
    """This thread's connection to the database (a sqlite3 connection stays in the
    thread that made it), in autocommit mode: no read sees an old snapshot."""
    connection = getattr(local, "connection", None)
    if connection is None:
        connection = sqlite3.connect(DATABASE, timeout=10, isolation_level=None)
        # With WAL, NORMAL loses no committed transaction when a process dies (only
        # when the machine does), and commits without waiting for the disk.
        connection.execute("PRAGMA synchronous=NORMAL")
        local.connection = connection
    return connection


@contextlib.contextmanager
def writing():
    """A write transaction. BEGIN IMMEDIATE takes the write lock at once: two processes
    writing at once wait for each other (the 10 s busy timeout) instead of failing."""
    connection = db()
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield connection
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


def record(connection, kind, what):
    """Append a change to the log in the caller's transaction: [id, kind, what]. The ids
    follow the order of the commits (the write lock is held from insert to commit)."""
    change_id = connection.execute("INSERT INTO changes (kind, what) VALUES (?, ?)",
                                   (kind, what)).lastrowid
    connection.execute("DELETE FROM changes WHERE id <= ?", (change_id - KEEP,))
    return [change_id, kind, what]


def note_uri(name):
    return f"notes://{name}"


# -- publishing ----------------------------------------------------------------------
# One retry, at once: a connection kept from before a restart of Redis fails once, and
# a Redis that is down is not waited for: the change is in the log already.
bus = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2, socket_timeout=2,
                           retry=Retry(NoBackoff(), 1))
publishing = {"failed": False}


def publish(changes):
    """Tell every process of the changes just committed."""
    try:
        bus.publish(CHANNEL, json.dumps(changes))
    except redis.RedisError as error:
        if not publishing["failed"]:
            log.warning("cannot publish on Redis (%s): the relays will find the "
                        "changes in the log", error)
        publishing["failed"] = True
        return
    if publishing["failed"]:
        log.info("publishing on Redis again")
        publishing["failed"] = False


# -- each process's relay ------------------------------------------------------------
class Relay:
    """This process's end of the channel: hands every change to the Server once, in the
    order of the log, whether it came from the channel or from the log."""

    def __init__(self, server):
        self.server = server
        # Changes before this process served its first request reach no client here
        newest = db().execute("SELECT coalesce(max(id), 0) FROM changes").fetchone()
        self.last = newest[0]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, name="notes-relay", daemon=True)

    def run(self):
        # No retries inside redis-py: it would reconnect and subscribe again silently,
        # and the messages published meanwhile would be lost without a trace.
        client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2,
                                      retry=Retry(NoBackoff(), 0))
        wait, lost_since = 0.1, None
        while not self.stop.is_set():
            channel = client.pubsub()
            try:
                channel.subscribe(CHANNEL)
                # Once Redis confirms the subscription every change published reaches
                # this channel; those committed before it are in the log.
                while not self.stop.is_set():
                    message = channel.get_message(timeout=1)
                    if message is not None and message["type"] == "subscribe":
                        break
                replayed = self.catch_up()
                if lost_since is None:
                    log.info("relay: subscribed to %s", CHANNEL)
                else:
                    log.warning("relay: reconnected to Redis after %.1f s; replayed %d "
                                "changes made meanwhile", time.monotonic() - lost_since,
                                replayed)
                wait, lost_since = 0.1, None
                self.follow(channel)
            except (redis.RedisError, OSError) as error:
                if lost_since is None:
                    lost_since = time.monotonic()
                    log.warning("relay: lost Redis (%s); reconnecting, then replaying "
                                "from the log", error)
                self.stop.wait(wait)
                wait = min(wait * 2, RETRY_MAX)
            except Exception:
                # Anything else (the database failing, a bug) is logged, and the relay
                # starts again from the last change it handed on: it never dies quietly.
                log.exception("relay: failed; starting again")
                self.stop.wait(RETRY_MAX)
            finally:
                channel.close()

    def follow(self, channel):
        """Hand on what the channel brings until the relay stops or Redis fails."""
        swept = time.monotonic()
        while not self.stop.is_set():
            message = channel.get_message(timeout=1)
            if message is not None and message["type"] == "message":
                self.heard(message["data"])
                swept = time.monotonic()
            elif time.monotonic() - swept > SWEEP:
                self.catch_up()
                swept = time.monotonic()

    def heard(self, data):
        """A message: the changes of one transaction, [[id, kind, what], ...]."""
        try:
            changes = [(int(change_id), kind, what) for change_id, kind, what
                       in json.loads(data)]
        except (ValueError, TypeError):
            log.warning("relay: a message that is not a list of changes; reading the "
                        "log")
            self.catch_up()
            return
        for change_id, kind, what in changes:
            if change_id == self.last + 1:
                self.hand_on(kind, what)
                self.last = change_id
            elif change_id > self.last + 1:
                # one is missing (its publish failed, or it is still on its way)
                self.catch_up()

    def catch_up(self):
        """Hand on every change in the log after the last one handed on, each distinct
        one once; how many there were."""
        rows = db().execute("SELECT id, kind, what FROM changes WHERE id > ? "
                            "ORDER BY id", (self.last,)).fetchall()
        if not rows:
            return 0
        if rows[0][0] > self.last + 1:
            self.refetch(rows[0][0] - self.last - 1)
        else:
            for kind, what in dict.fromkeys((kind, what) for _, kind, what in rows):
                self.hand_on(kind, what)
        self.last = rows[-1][0]
        return len(rows)

    def refetch(self, lost):
        """The log no longer holds changes this relay missed: every listener here is
        told to read everything again."""
        log.warning("relay: %d changes are gone from the log (it keeps %d); telling "
                    "every listener to read the notes again", lost, KEEP)
        self.server.notify_list_changed("resources")
        for (name,) in db().execute("SELECT name FROM notes").fetchall():
            self.server.notify_resource_updated(note_uri(name))

    def hand_on(self, kind, what):
        if kind == "updated":
            self.server.notify_resource_updated(what)
        else:
            self.server.notify_list_changed(what)


def lifespan(server):
    """Entered in each process before it serves: the tables, then the relay."""
    connection = db()
    connection.execute("PRAGMA journal_mode=WAL")
    connection.executescript(SCHEMA)
    relay = Relay(server)
    relay.thread.start()
    try:
        yield
    finally:
        relay.stop.set()
        relay.thread.join(5)


server = Server("notes", "1.0.0", title="Notes shared by several processes",
                lifespan=lifespan,
                instructions="Notes are resources notes://NAME; write_note and "
                             "delete_note change them.")


# -- tools and resources -------------------------------------------------------------
def checked_name(name):
    if not NAME.fullmatch(name):
        raise ToolError(f"A note's name is 1 to 64 letters, digits, '-' or '_', not "
                        f"{name[:80]!r}.")
    return name


@server.tool
def write_note(name: str, text: str) -> dict:
    """Create or replace a note. Returns whether it was created, and the id of the
    process that served the call (to see the balancing).

    Args:
        name: 1 to 64 letters, digits, "-" or "_"
        text: the note, at most 65,536 characters
    """
    checked_name(name)
    if len(text) > MAX_TEXT:
        raise ToolError(f"A note holds at most {MAX_TEXT:,} characters, not "
                        f"{len(text):,}.")
    with writing() as connection:
        exists = connection.execute("SELECT 1 FROM notes WHERE name = ?",
                                    (name,)).fetchone() is not None
        if not exists:
            count = connection.execute("SELECT count(*) FROM notes").fetchone()[0]
            if count >= MAX_NOTES:
                raise ToolError(f"There are {count:,} notes, the most kept "
                                f"(MAX_NOTES): delete one first.")
        connection.execute("INSERT OR REPLACE INTO notes VALUES (?, ?)", (name, text))
        changes = [record(connection, "updated", note_uri(name))]
        if not exists:
            changes.append(record(connection, "list_changed", "resources"))
    publish(changes)
    return {"created": not exists, "process": os.getpid()}


@server.tool
def delete_note(name: str) -> dict:
    """Delete a note.

    Args:
        name: the note's name
    """
    with writing() as connection:
        deleted = connection.execute("DELETE FROM notes WHERE name = ?",
                                     (checked_name(name),)).rowcount
        if not deleted:
            raise ToolError(f"There is no note {name!r}.")
        changes = [record(connection, "updated", note_uri(name)),
                   record(connection, "list_changed", "resources")]
    publish(changes)
    return {"process": os.getpid()}


@server.resource("notes://{name}", mime_type="text/plain")
def note(name: str) -> str:
    """A note's text."""
    row = db().execute("SELECT text FROM notes WHERE name = ?", (name,)).fetchone()
    if row is None:
        raise ResourceNotFound(note_uri(name))
    return row[0]


def list_notes(ctx, params):
    """resources/list: the notes in the database, by name, PAGE at a time. (The
    server's registry holds only the template: the notes other processes write are
    not registered here.)"""
    after = params.get("cursor", "")
    if not isinstance(after, str):
        raise JSONRPCError(-32602, "resources/list: the cursor must be a string")
    rows = db().execute("SELECT name FROM notes WHERE name > ? ORDER BY name LIMIT ?",
                        (after, PAGE + 1)).fetchall()
    result = {"resources": [{"uri": note_uri(name), "name": name,
                             "mimeType": "text/plain"} for (name,) in rows[:PAGE]]}
    if len(rows) > PAGE:
        result["nextCursor"] = rows[PAGE - 1][0]
    return result


server.handlers["resources/list"] = list_notes

if __name__ == "__main__":
    server.run()
