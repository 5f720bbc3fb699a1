#!/usr/bin/env python3
"""Compiles every C example of the header's comments (the ```c blocks that
cbindgen copied from the exported items' docs), each in a function of its
own, so the examples a C user copies stay right.

    python3 ffi/check_snippets.py ffi/include/autoretry.h   # exit 1 on a failure
"""
import re
import subprocess
import sys
import tempfile

header = sys.argv[1] if len(sys.argv) > 1 else "ffi/include/autoretry.h"
text = open(header, encoding="utf-8").read()
blocks = re.findall(r"^// ```c\n((?://.*\n)*?)// ```$", text, re.M)
if not blocks:
    sys.exit(f"{header}: no C examples found")

source = ["#include <stdint.h>", "#include <stdio.h>", "#include <stdlib.h>",
          "#include <string.h>", '#include "autoretry.h"', ""]
# What the examples take from the text around them: a machine `h`, an
# output buffer, the pending timer, an input, a rules blob read from a file,
# a budget `b`.
CONTEXT = """    uint8_t out[512];
    uint64_t timer = 1;
    autoretry_input in = {0};
    uint8_t *blob = NULL;
    size_t blob_len = 0;
    int32_t b = 1;
    (void)h; (void)out; (void)timer; (void)in; (void)blob; (void)blob_len; (void)b;
"""
for i, block in enumerate(blocks, 1):
    body = "".join(re.sub(r"^// ?", "    ", line) + "\n" for line in block.splitlines())
    # Each example in a block of its own, with a machine `h` in scope.
    source.append(f"int example_{i}(int32_t h) {{\n{CONTEXT}    {{\n{body}    }}\n    return 0;\n}}\n")

with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as f:
    f.write("\n".join(source))
flags = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-Wno-unused-variable",
         "-Wno-unused-but-set-variable", "-Wno-shadow", "-Iffi/include", "-c", "-o", "/dev/null"]
result = subprocess.run(["gcc", *flags, f.name], capture_output=True, text=True)
if result.returncode != 0:
    sys.exit(f"the header's C examples do not compile ({f.name}):\n{result.stderr}")
print(f"{len(blocks)} C examples of {header} compile")
