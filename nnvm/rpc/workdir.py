"""A session's files: flat names inside one folder, opened relative to the folder's descriptor
with O_NOFOLLOW, so no name a client sends can reach outside it (no absolute paths, no `..`, no
sub-folders, no symlinks, nothing but regular files)."""

from __future__ import annotations

import os
import re
import stat

from nnvm.rpc.errors import RPCRemoteError

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+-]{0,127}")


def check_name(name: object) -> str:
    """A plain file name, or RPCRemoteError saying why not."""
    if not isinstance(name, str) or not name:
        raise RPCRemoteError("a file name must be a non-empty string")
    if "\x00" in name:
        raise RPCRemoteError(f"file name {name[:60]!r} holds a NUL byte")
    if name.startswith("/") or os.path.isabs(name):
        raise RPCRemoteError(
            f"absolute path {name[:60]!r} refused: names are relative to the session's work dir"
        )
    if "/" in name or "\\" in name:
        parts = re.split(r"[/\\]", name)
        if ".." in parts:
            raise RPCRemoteError(f"path {name[:60]!r} refused: '..' would leave the work dir")
        raise RPCRemoteError(f"path {name[:60]!r} refused: names are flat (no folders)")
    if name in (".", ".."):
        raise RPCRemoteError(f"name {name!r} refused: '..' would leave the work dir")
    if not _NAME.fullmatch(name):
        raise RPCRemoteError(
            f"name {name[:60]!r} refused: use 1-128 of A-Z a-z 0-9 . _ + -, not starting with '.'"
        )
    return name


class WorkDir:
    """The session's folder, held open by descriptor."""

    def __init__(self, path: str):
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)

    def _regular(self, fd: int, name: str) -> os.stat_result:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise RPCRemoteError(f"{name!r} is not a regular file")
        return st

    def open_read(self, name: str) -> tuple[int, int]:
        """(descriptor, size) of an existing regular file."""
        check_name(name)
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=self.fd)
        except FileNotFoundError:
            raise RPCRemoteError(f"no file {name!r} in the session's work dir") from None
        except OSError as err:  # ELOOP: a symlink
            raise RPCRemoteError(f"cannot open {name!r}: {err.strerror}") from None
        return fd, self._regular(fd, name).st_size

    def write(self, name: str, chunks) -> int:
        """Write a file from byte chunks through a temporary name, then rename it in place."""
        check_name(name)
        tmp = f".part-{name}"
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600, dir_fd=self.fd
        )
        size = 0
        try:
            with os.fdopen(fd, "wb") as f:
                for piece in chunks:
                    f.write(piece)
                    size += len(piece)
            try:
                st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
                if not stat.S_ISREG(st.st_mode):
                    raise RPCRemoteError(f"{name!r} exists and is not a regular file")
            except FileNotFoundError:
                pass
            os.rename(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=self.fd)
            except OSError:
                pass
            raise
        return size

    def remove(self, name: str) -> None:
        check_name(name)
        try:
            os.unlink(name, dir_fd=self.fd)
        except FileNotFoundError:
            raise RPCRemoteError(f"no file {name!r} in the session's work dir") from None

    def listdir(self) -> list[dict]:
        out = []
        for name in sorted(os.listdir(self.fd)):
            if name.startswith("."):
                continue
            st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            if stat.S_ISREG(st.st_mode):
                out.append({"name": name, "size": st.st_size})
        return out

    def used_bytes(self) -> int:
        return sum(f["size"] for f in self.listdir())

    def real_path(self, name: str) -> str:
        """The path of a checked regular file (for dlopen, which takes a path)."""
        fd, _ = self.open_read(name)
        os.close(fd)
        return os.path.join(self.path, name)

    def close(self) -> None:
        os.close(self.fd)
