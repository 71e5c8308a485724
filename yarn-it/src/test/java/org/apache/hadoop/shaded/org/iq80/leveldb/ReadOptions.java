package org.apache.hadoop.shaded.org.iq80.leveldb;

/** Read options; none matter to the file-backed store. */
public class ReadOptions {}
