# Source on the device machine: make aka importable without building it (the image has
# no network and an older setuptools). Wheels go into the interpreter's own site-packages
# and a .pth file adds a folder where the package folders are linked under their import
# names, with a dist-info carrying the agent entry points. Both survive `python -I`
# (the evaluator's isolated children ignore PYTHONPATH).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --break-system-packages .whl/*.whl 2>/dev/null \
  || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl || return 1
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
echo /tmp/pp > "$(python3 -c 'import site; print(site.getsitepackages()[0])')/aka-dev.pth"
printf '#!/usr/bin/env python3\nfrom aka.cli import main\nmain()\n' > /tmp/pp/bin/aka; chmod +x /tmp/pp/bin/aka
export PATH=/tmp/pp/bin:$PATH
python3 -I -c "import aka, aka_ledger, pydantic, blake3; print('aka importable under -I')" || return 1
