package io.memwire.shuffle.directory;

import io.memwire.transfer.BufferUnit;
import io.memwire.transfer.MemoryRegion;
import java.util.List;

/**
 * What the directory holds for one published map output: the regions of its files (index and data,
 * or only data when a metadata region replaces the index) and its metadata region. Released
 * together when the output is replaced, its shuffle unregistered or the directory closed.
 *
 * @param files the file regions reducers read
 * @param metadata the output's metadata region (entries, then checksums), or null for none
 */
record RegisteredOutput(List<MemoryRegion> files, BufferUnit metadata) {

  /** Closes the file regions and releases the metadata. */
  void close() {
    files.forEach(MemoryRegion::close);
    if (metadata != null) {
      metadata.release(); // closes its region; the memory goes once no read copies from it
    }
  }
}
