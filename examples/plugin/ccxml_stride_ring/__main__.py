"""``python -m ccxml_stride_ring ARGS`` = ``ccxml generate stride-ring ARGS`` (installed or not)."""
import ccxml_stride_ring  # registers stride-ring
from ccxml.cli import run_script

run_script(ccxml_stride_ring.NAME)
