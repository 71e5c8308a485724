/** Spark ShuffleManager whose reducers read blocks with one-sided reads. */
package io.memwire.shuffle;
