"""``python -m aka.kinds._image_exec exec CONTAINER COMMAND``: one task command in a container.

The image kind (:mod:`aka.kinds._image`) wraps each of a task's commands in this, so
the command kind's runner (interleaving, report reading) is used unchanged while the
command executes in the evaluation's container, in the directory it was given.
"""

from __future__ import annotations

import os
import sys

from aka.kinds._image import docker_from_env


def main(argv: list[str] | None = None) -> int:
    """``exec CONTAINER COMMAND``: run COMMAND in the container, in this directory."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3 or args[0] != "exec":
        print("usage: python -m aka.kinds._image_exec exec CONTAINER COMMAND", file=sys.stderr)
        return 2
    client = docker_from_env()
    container = client.containers.get(args[1])
    env = {k: os.environ[k] for k in ("TRITON_INTERPRET",) if k in os.environ}
    code, output = container.exec_run(
        ["sh", "-c", args[2]],
        workdir=os.getcwd(),
        environment={"HOME": "/tmp", **env},
        user=f"{os.getuid()}:{os.getgid()}",
    )
    sys.stdout.write(output.decode(errors="replace"))
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
