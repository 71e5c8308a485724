package io.memwire.shuffle.service;

import io.memwire.shuffle.directory.ChecksumAlgorithm;
import io.memwire.shuffle.directory.OutputChecksums;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/**
 * What the recovery store keeps, and its byte layout: one entry per application (its token, driver
 * and directory) and one per held map output (where its links are and what the service saw of
 * them). Keys are {@code a\0user\0app} and {@code o\0user\0app\0shuffle\0executor\0mapIndex}, so an
 * application's or a shuffle's outputs are one key range; values start with a version byte and
 * repeat the key's fields, so a value is read without parsing its key.
 */
final class RecoveryRecords {
  /**
   * Layout version of every value written; a value of another version than 1 (no pointer keys), 2
   * (no checksums) or this one is dropped as corrupt.
   */
  static final int VERSION = 3;

  /** Region keys of earlier directory chunks an output record keeps (old pointers it answers). */
  static final int MAX_POINTER_KEYS = 4;

  private static final byte SEP = 0;

  private RecoveryRecords() {}

  /** One application: its user's name, id, token, driver address as registered, directory name. */
  record AppRecord(
      String user, String id, byte[] token, String driverHost, int driverPort, String dirName) {}

  /**
   * One held output of an application's executor: the map task attempt, the names of its links in
   * the executor's directory ({@code dataName} empty without a data file) and their checks; {@code
   * pointerKeys}: the region keys of the directory chunk it was published in, by this run and the
   * last ones (newest last, at most {@link #MAX_POINTER_KEYS}), so a reader's old pointer resolves;
   * {@code checksums}: Spark's values it was published with (null: none), published again when it
   * is taken back, so a recovered output is still read verified.
   */
  record OutputRecord(
      String user,
      String appId,
      String executor,
      int shuffleId,
      int mapIndex,
      long mapId,
      String indexName,
      String dataName,
      long indexLength,
      long dataLength,
      FileCheck indexCheck,
      FileCheck dataCheck,
      long[] pointerKeys,
      OutputChecksums checksums) {

    /** This record published again in a chunk whose region key is {@code key}. */
    OutputRecord withPointerKey(long key) {
      int keep = Math.min(pointerKeys.length, MAX_POINTER_KEYS - 1);
      long[] keys = new long[keep + 1];
      System.arraycopy(pointerKeys, pointerKeys.length - keep, keys, 0, keep);
      keys[keep] = key;
      return new OutputRecord(
          user,
          appId,
          executor,
          shuffleId,
          mapIndex,
          mapId,
          indexName,
          dataName,
          indexLength,
          dataLength,
          indexCheck,
          dataCheck,
          keys,
          checksums);
    }
  }

  static byte[] appKey(String user, String appId) {
    return key("a", user, appId);
  }

  static byte[] outputKey(OutputRecord o) {
    return key(
        "o",
        o.user(),
        o.appId(),
        Integer.toString(o.shuffleId()),
        o.executor(),
        Integer.toString(o.mapIndex()));
  }

  /** The first key of an application's outputs; the range ends at {@link #rangeEnd}. */
  static byte[] outputsOf(String user, String appId) {
    return prefix(key("o", user, appId));
  }

  /** The first key of one shuffle's outputs of an application. */
  static byte[] outputsOf(String user, String appId, int shuffleId) {
    return prefix(key("o", user, appId, Integer.toString(shuffleId)));
  }

  /** The key after every key starting with {@code prefix} (which ends with a separator). */
  static byte[] rangeEnd(byte[] prefix) {
    byte[] end = prefix.clone();
    end[end.length - 1] = SEP + 1;
    return end;
  }

  /** True for an application's key, false for an output's. */
  static boolean isApp(byte[] key) {
    return key.length > 0 && key[0] == 'a';
  }

  private static byte[] prefix(byte[] key) {
    byte[] p = new byte[key.length + 1];
    System.arraycopy(key, 0, p, 0, key.length);
    p[key.length] = SEP;
    return p;
  }

  private static byte[] key(String... parts) {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    for (int i = 0; i < parts.length; i++) {
      if (i > 0) {
        b.write(SEP);
      }
      b.writeBytes(parts[i].getBytes(StandardCharsets.UTF_8));
    }
    return b.toByteArray();
  }

  static byte[] encode(AppRecord a) {
    return write(
        out -> {
          out.writeUTF(a.user());
          out.writeUTF(a.id());
          out.writeShort(a.token().length);
          out.write(a.token());
          out.writeUTF(a.driverHost());
          out.writeShort(a.driverPort());
          out.writeUTF(a.dirName());
        });
  }

  static byte[] encode(OutputRecord o) {
    return write(
        out -> {
          out.writeUTF(o.user());
          out.writeUTF(o.appId());
          out.writeUTF(o.executor());
          out.writeInt(o.shuffleId());
          out.writeInt(o.mapIndex());
          out.writeLong(o.mapId());
          out.writeUTF(o.indexName());
          out.writeUTF(o.dataName());
          out.writeLong(o.indexLength());
          out.writeLong(o.dataLength());
          writeCheck(out, o.indexCheck());
          writeCheck(out, o.dataCheck());
          out.writeByte(o.pointerKeys().length);
          for (long k : o.pointerKeys()) {
            out.writeLong(k);
          }
          OutputChecksums c = o.checksums();
          out.writeByte(c == null ? 0 : c.algorithm().code());
          if (c != null) {
            out.writeInt(c.values().length);
            for (long v : c.values()) {
              out.writeLong(v);
            }
          }
        });
  }

  /**
   * Decodes an application's value.
   *
   * @throws IOException when it is truncated, of another version or has bytes left over
   */
  static AppRecord decodeApp(byte[] value) throws IOException {
    DataInputStream in = reader(value);
    String user = in.readUTF();
    String id = in.readUTF();
    byte[] token = new byte[in.readUnsignedShort()];
    in.readFully(token);
    AppRecord a =
        new AppRecord(user, id, token, in.readUTF(), in.readUnsignedShort(), in.readUTF());
    end(in);
    return a;
  }

  /** Decodes an output's value; throws IOException as {@link #decodeApp} does. */
  static OutputRecord decodeOutput(byte[] value) throws IOException {
    DataInputStream in = reader(value);
    int version = value[0];
    OutputRecord o =
        new OutputRecord(
            in.readUTF(),
            in.readUTF(),
            in.readUTF(),
            in.readInt(),
            in.readInt(),
            in.readLong(),
            in.readUTF(),
            in.readUTF(),
            in.readLong(),
            in.readLong(),
            readCheck(in),
            readCheck(in),
            version == 1 ? new long[0] : readKeys(in),
            version < 3 ? null : readChecksums(in));
    end(in);
    return o;
  }

  private interface Writer {
    void write(DataOutputStream out) throws IOException;
  }

  private static byte[] write(Writer w) {
    ByteArrayOutputStream b = new ByteArrayOutputStream(160);
    try (DataOutputStream out = new DataOutputStream(b)) {
      out.writeByte(VERSION);
      w.write(out);
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a ByteArrayOutputStream does not fail
    }
    return b.toByteArray();
  }

  private static DataInputStream reader(byte[] value) throws IOException {
    DataInputStream in = new DataInputStream(new ByteArrayInputStream(value));
    int version = in.readUnsignedByte();
    if (version != VERSION && version != 1) {
      throw new IOException("record version " + version + ", expected " + VERSION);
    }
    return in;
  }

  private static long[] readKeys(DataInputStream in) throws IOException {
    int n = in.readUnsignedByte();
    if (n > MAX_POINTER_KEYS) {
      throw new IOException(n + " pointer keys in a record, at most " + MAX_POINTER_KEYS);
    }
    long[] keys = new long[n];
    for (int i = 0; i < n; i++) {
      keys[i] = in.readLong();
    }
    return keys;
  }

  private static OutputChecksums readChecksums(DataInputStream in) throws IOException {
    int code = in.readUnsignedByte();
    if (code == 0) {
      return null;
    }
    ChecksumAlgorithm a = ChecksumAlgorithm.ofCode(code);
    int n = in.readInt();
    if (a == null || n < 0 || n > in.available() / 8) {
      throw new IOException("checksums of algorithm " + code + ", " + n + " values");
    }
    long[] v = new long[n];
    for (int i = 0; i < n; i++) {
      v[i] = in.readLong();
    }
    return new OutputChecksums(a, v);
  }

  private static void end(DataInputStream in) throws IOException {
    if (in.available() > 0) {
      throw new IOException(in.available() + " bytes left over in a record");
    }
  }

  private static void writeCheck(DataOutputStream out, FileCheck c) throws IOException {
    out.writeBoolean(c != null);
    if (c != null) {
      out.writeLong(c.device());
      out.writeLong(c.inode());
      out.writeLong(c.size());
      out.writeLong(c.mtimeNanos());
    }
  }

  private static FileCheck readCheck(DataInputStream in) throws IOException {
    return in.readBoolean()
        ? new FileCheck(in.readLong(), in.readLong(), in.readLong(), in.readLong())
        : null;
  }
}
