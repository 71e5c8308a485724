package io.memwire.shuffle.reader;

import io.memwire.shuffle.directory.DirectorySlot;

/** What the slot stage hands the index stage: one map output's blocks and its directory slot. */
record SlottedBlocks(MapBlocks map, DirectorySlot slot) {}
