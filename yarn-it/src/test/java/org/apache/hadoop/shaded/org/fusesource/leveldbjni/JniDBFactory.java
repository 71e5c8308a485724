package org.apache.hadoop.shaded.org.fusesource.leveldbjni;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.apache.hadoop.shaded.org.fusesource.leveldbjni.internal.NativeDB;
import org.apache.hadoop.shaded.org.iq80.leveldb.DB;
import org.apache.hadoop.shaded.org.iq80.leveldb.Options;

/**
 * Opens the NodeManager state store's database under the shaded name Hadoop's minicluster jar
 * refers to (see {@code org.apache.hadoop.shaded.org.iq80.leveldb}): a {@link FileBackedDb} in the
 * given directory, so a NodeManager started again with the same recovery directory finds what the
 * stopped one recorded.
 */
public class JniDBFactory {
  /** The instance the state store uses. */
  public static final JniDBFactory factory = new JniDBFactory();

  /**
   * Opens the store in {@code dir}.
   *
   * @throws NativeDB.DBException "does not exist" when there is none and {@code options} do not
   *     create it (the state store then opens again with creation on)
   */
  public DB open(File dir, Options options) throws IOException {
    return FileBackedDb.open(dir.toPath(), options.createIfMissing());
  }

  /** {@code s} in UTF-8. */
  public static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** {@code b} read as UTF-8. */
  public static String asString(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }
}
