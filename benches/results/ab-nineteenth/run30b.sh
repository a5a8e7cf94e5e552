#!/bin/bash
# Nineteenth session, call 1b (the machine still warm after call 1): the device tool returns at most 8 files
# of $OUT, so call 1's bench.json files were copied again from /tmp/o_* and the register counts re-run
# (same binaries, same shader directories), then sent back as one archive.
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig; export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json VK_ICD_FILENAMES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; R=/tmp/res30; mkdir -p $R; for n in base base2 FL GB K KFL; do cp /tmp/o_$n/bench.json $R/$n.json; done; .devbin/ps --policy unchecked > $R/stats_all.txt 2>&1; for v in K FL KFL; do .devbin/ps --policy unchecked --filter compress --shaders .devbin/sv/$v > $R/stats_$v.txt 2>&1; done; .devbin/ps --policy unchecked --filter decompress.wgsl --shaders .devbin/sv/GB > $R/stats_GB.txt 2>&1; tar czf $OUT/res30.tgz -C /tmp res30; ls -la $OUT
