"""attn-bench's peer runner: runs other libraries' attention on a batch `attn-bench workload dump`
wrote, verifies each against the dump's reference output and times it under attn-bench's policy.

Modules, bottom up: safetensors_file (the file format), batch (the dump as numpy arrays, layouts,
pages gathered per sequence), verify (the row-wise rule of measure/verify.cpp), timing (the policy
of docs/measurement.md), peers/ (one module per library), runner (the loop) and cli (argv).
docs/peers.md describes the whole.
"""
