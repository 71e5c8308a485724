/**
 * Spark ShuffleManager whose reducers read blocks with one-sided reads: {@link
 * io.memwire.shuffle.RdmaShuffleManager} and its counters. Subpackages: {@code conf} (settings),
 * {@code directory} (where map outputs are published), {@code writer} (map side), {@code reader}
 * (reduce side), {@code compat} (Spark-version-specific calls).
 */
package io.memwire.shuffle;
