#!/usr/bin/env python3
"""Times a command's output as a terminal shows it: the wall time and the longest gaps
between output writes. Usage (from a fresh clone):
  script -q -e -c "cargo xtask demo" /dev/null | python3 scripts/timing/silences.py LOG
Only the Python standard library."""
# Reads raw output, writes it to a log, and records the time of each chunk; at the end
# prints the longest gaps between chunks (what a terminal user would see as silence).
import sys, time
t0 = time.time(); last = t0; gaps = []
log = open(sys.argv[1], 'wb')
tail = b''
while True:
    chunk = sys.stdin.buffer.read1(65536)
    if not chunk:
        break
    now = time.time()
    gaps.append((now - last, now - t0, tail[-100:]))
    last = now
    log.write(chunk); log.flush()
    tail = (tail + chunk)[-200:]
gaps.sort(reverse=True)
print("wall %.1f s" % (time.time() - t0))
for g, at, before in gaps[:5]:
    print("gap %.1f s at %.1f s after: %r" % (g, at, before[-90:]))
