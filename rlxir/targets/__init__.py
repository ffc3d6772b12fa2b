"""Targets as plain data: a target's declared fields and registry (target.py) and the device
capacity probes (devices.py). The pass machinery and the compiler read them; they import
only the base modules."""
