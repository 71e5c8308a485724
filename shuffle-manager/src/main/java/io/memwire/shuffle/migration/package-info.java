/**
 * Map outputs that Spark's decommissioning migrates to this executor: the block resolver Spark
 * stores them through, and the step that publishes them and gives their new location a pointer.
 */
package io.memwire.shuffle.migration;
