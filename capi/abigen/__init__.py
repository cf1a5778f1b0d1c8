"""The work of capi/gen_abi.py: reading sdm.h and writing every file that restates it (gen_abi.py's
docstring has the rules the header is read by)."""
