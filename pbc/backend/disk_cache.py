"""On-disk cache of compiled kernels: one file per key, written atomically, verified on read.

A file holds MAGIC, the payload length, the payload's SHA-256 and the payload. Anything
that does not verify (truncated, corrupt, foreign) is a miss and is recompiled.
"""

import hashlib
import logging
import os
import struct
import tempfile

MAGIC = b'PBCK0001'
_HEADER = struct.Struct('<8sQ32s')
log = logging.getLogger('pbc')


class DiskCache:
    def __init__(self, directory):
        self.directory = directory
        self.writable = True
        try:
            os.makedirs(directory, exist_ok=True)
            probe = tempfile.NamedTemporaryFile(dir=directory, prefix='.probe', delete=True)
            probe.close()
        except OSError as e:
            self._disable(e)

    def _disable(self, error):
        if self.writable:
            import warnings
            warnings.warn(f'pbc: kernel cache directory {self.directory!r} is not writable '
                          f'({error}); caching kernels in memory only', RuntimeWarning,
                          stacklevel=4)
        self.writable = False

    def path(self, key):
        return os.path.join(self.directory, key + '.o')

    def load(self, key):
        """The payload stored under key, or None (missing or failing verification)."""
        try:
            with open(self.path(key), 'rb') as f:
                blob = f.read()
        except OSError:
            return None
        if len(blob) < _HEADER.size:
            return None
        magic, size, digest = _HEADER.unpack_from(blob)
        payload = blob[_HEADER.size:]
        if magic != MAGIC or size != len(payload) or hashlib.sha256(payload).digest() != digest:
            log.debug('pbc: ignoring corrupt cache entry %s', key)
            return None
        return payload

    def store(self, key, payload):
        if not self.writable:
            return
        header = _HEADER.pack(MAGIC, len(payload), hashlib.sha256(payload).digest())
        try:
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix='.tmp')
            with os.fdopen(fd, 'wb') as f:
                f.write(header + payload)
            os.replace(tmp, self.path(key))
        except OSError as e:
            self._disable(e)
