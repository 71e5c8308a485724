/**
 * Test stand-ins for the LevelDB API that Hadoop's NodeManager state store was compiled against.
 *
 * <p>{@code hadoop-client-minicluster} relocates LevelDB to {@code org.apache.hadoop.shaded} but
 * does not carry it (leveldbjni's native code is bound to the original class names, so it cannot be
 * relocated), so a NodeManager with recovery on fails to start there. These types have the shaded
 * names and the few members the state store calls; {@link
 * org.apache.hadoop.shaded.org.fusesource.leveldbjni.JniDBFactory} opens a small file-backed store
 * behind them. Only the yarn-it tests use them; Memwire's own recovery store (RocksDB) is not
 * involved.
 */
package org.apache.hadoop.shaded.org.iq80.leveldb;
