"""What a bundle may hold: the bounds that keep a hostile bundle from exhausting memory, disk or time.

A bundle comes from elsewhere and its author writes the manifest too, so nothing in it is believed:
each bound is checked from the ZIP directory before a byte is decompressed, again while each member
is streamed, and the writers (export, record) never write what these bounds refuse.
"""

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
SECOND_MS = 1000
HOUR_MS = 3600 * SECOND_MS

# --- the ZIP container ---------------------------------------------------------------------------
DIRECTORY_BYTES = 4 * MiB  # zipfile reads the central directory whole: about 60,000 members
MEMBERS = 50_000
MANIFEST_BYTES = 8 * MiB
METADATA_BYTES = 32 * MiB
CHUNK_BYTES = 128 * MiB  # promtool reads its input whole
TEXT_BYTES = 16 * MiB  # one SHOW ENGINE INNODB STATUS / MUTEX text
TOTAL_BYTES = 64 * GiB  # every member, decompressed
# Decompressed / compressed size of a member. OpenMetrics text compresses 5-30 times; deflate can
# reach 1,000. Members below RATIO_FLOOR are exempt: a small file of repeats is no bomb.
RATIO = 200
RATIO_FLOOR = 1 * MiB
# The same ratio over all members together, above this much decompressed: thousands of members each
# just under RATIO_FLOOR made 52 GB from 57 MB.
TOTAL_RATIO_FLOOR = 64 * MiB

# --- the samples ---------------------------------------------------------------------------------
LINE_BYTES = 16 * KiB  # one OpenMetrics line: a series' name and labels, a value, a timestamp
LABELS = 64  # per series
SERIES = 500_000  # distinct series in a bundle (a server has 2,000-3,000); an 8-byte digest each is kept
WINDOW_MS = 31 * 24 * HOUR_MS  # a bundle's time window
CHUNK_SPAN_MS = 24 * HOUR_MS  # one chunk's time window (export writes at most a day, record 10 minutes)
MAX_MS = 10**13  # timestamps in ms: up to the year 2286

# --- the import ------------------------------------------------------------------------------------
# promtool writes a block per 2-hour window of each input and parses its whole input once per window
# (Prometheus 2.42 has no --max-block-duration): import feeds it runs of consecutive chunks of up to
# RUN_BYTES and RUN_PARSE_BYTES (windows spanned times bytes), and refuses a bundle whose runs could
# make more than BLOCKS blocks.
BLOCK_MS = 2 * HOUR_MS
RUN_BYTES = 64 * MiB
RUN_PARSE_BYTES = 1 * GiB
BLOCKS = 1_000
PROMTOOL_TIMEOUT_S = 600.0  # one promtool run; it is killed after that
