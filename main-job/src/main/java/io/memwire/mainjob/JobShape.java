package io.memwire.mainjob;

/**
 * The size of one job of the main job: how many records it generates, over how many keys, with
 * values of how many bytes, on how many map tasks, shuffled into how many partitions.
 */
record JobShape(long records, int keys, int valueBytes, int maps, int partitions) {
  /** The small job: the same three shuffles over few records, paying mostly fixed costs. */
  JobShape small() {
    return new JobShape(16_000, 2_000, valueBytes, maps, partitions);
  }
}
