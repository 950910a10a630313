# Source on the device machine: make aka importable without building it (the image has
# no network and an older setuptools). Package folders are linked under their import
# names, and a dist-info carries the agent entry points.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || return 1
mkdir -p /tmp/pp/aka-0.1.0.dist-info /tmp/pp/bin
ln -sfn "$PWD/aka" /tmp/pp/aka; ln -sfn "$PWD/ledger" /tmp/pp/aka_ledger
ln -sfn "$PWD/agents" /tmp/pp/aka_agents; ln -sfn "$PWD/runners" /tmp/pp/aka_runners
printf 'Metadata-Version: 2.1\nName: aka\nVersion: 0.1.0\n' > /tmp/pp/aka-0.1.0.dist-info/METADATA
python3 - <<'PY' > /tmp/pp/aka-0.1.0.dist-info/entry_points.txt
import tomllib
p = tomllib.load(open("pyproject.toml", "rb"))["project"]
print("[aka.agents]")
for k, v in p["entry-points"]["aka.agents"].items():
    print(f"{k} = {v}")
print("[console_scripts]")
print("aka = aka.cli:main")
PY
printf '#!/usr/bin/env python3\nfrom aka.cli import main\nmain()\n' > /tmp/pp/bin/aka; chmod +x /tmp/pp/bin/aka
export PYTHONPATH=/tmp/pp:/tmp/site PATH=/tmp/pp/bin:$PATH
