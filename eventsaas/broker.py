"""The embedded default's Celery broker: a folder of message files (`folder://`, docs/workers.md).

kombu's filesystem transport with two fixes, registered under its own URL scheme so that a Redis URL still
gets Redis's transport:

- **Taking a message lists the folder once, not once per message.** kombu lists and sorts the whole folder
  for every message it takes, so draining a backlog is quadratic: 5,000 queued activity messages took 20 s,
  16 of them in `listdir` and `sorted`. Here a channel keeps the sorted listing of a queue's files and takes
  them in order, listing again only when it has run out.
- **A message is never read half-written.** kombu creates the message file under its final name and then
  writes it; a consumer listing the folder in between takes an empty file, fails to decode it and loses it.
  Here the file is written under a temporary name and renamed into place (atomic within one folder), and a
  consumer claims a file by renaming it within the same folder (atomic too; kombu moves it to the system's
  temporary folder, a copy across file systems when /tmp is a tmpfs).

Messages are files named `<nanoseconds>_<uuid>.<queue>.msg` (kombu uses milliseconds, which tie and then
sort by the random uuid), so the folder stays readable with kombu's own transport too.
"""

import os
import uuid
from collections import deque
from queue import Empty
from time import monotonic_ns
from typing import Any

from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

SCHEME = "folder"
#: Broker URLs whose messages are files in a folder: this transport's, and kombu's own.
FOLDER_URLS = (f"{SCHEME}://", "filesystem://")


def is_folder_broker(url) -> bool:
    return str(url).startswith(FOLDER_URLS)


class Channel(filesystem.Channel):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._listed: dict[str, deque] = {}

    def _put(self, queue, payload, **kwargs):
        # Nanoseconds, zero-padded: names sort in the order they were published (kombu's milliseconds tie).
        name = f"{monotonic_ns():020d}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        # The temporary name does not end in ".<queue>.msg", so no consumer takes it before the rename.
        temporary = final + ".writing"
        try:
            with open(temporary, "wb") as file:
                file.write(str_to_bytes(dumps(payload)))
            os.rename(temporary, final)
        except OSError as exc:
            raise filesystem.ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _get(self, queue):
        wanted = f"{queue}.msg"
        pending = self._listed.setdefault(queue, deque())
        listed = False
        while True:
            if not pending:
                if listed:
                    raise Empty()
                names = (name for name in os.listdir(self.data_folder_in) if name.partition(".")[2] == wanted)
                pending.extend(sorted(names))
                listed = True
                continue
            path = os.path.join(self.data_folder_in, pending.popleft())
            claimed = path + ".taken"
            try:
                os.rename(path, claimed)
            except OSError:
                continue  # another consumer took it
            try:
                with open(claimed, "rb") as file:
                    payload = file.read()
                os.remove(claimed)
            except OSError as exc:
                raise filesystem.ChannelError(f"Cannot read file {claimed!r} from queue.") from exc
            return loads(bytes_to_str(payload))


class Transport(filesystem.Transport):
    Channel = Channel
    driver_name = "folder"


TRANSPORT_ALIASES.setdefault(SCHEME, f"{__name__}:Transport")
