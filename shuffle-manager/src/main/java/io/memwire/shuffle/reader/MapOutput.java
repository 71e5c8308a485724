package io.memwire.shuffle.reader;

import io.memwire.shuffle.directory.DirectorySlot;

/**
 * What an executor knows of one map output: its slot, and its index entries when they were read
 * whole and kept (else null).
 */
record MapOutput(DirectorySlot slot, long[] offsets) {}
