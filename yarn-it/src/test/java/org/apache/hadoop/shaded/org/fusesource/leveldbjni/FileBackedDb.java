package org.apache.hadoop.shaded.org.fusesource.leveldbjni;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.TreeMap;
import org.apache.hadoop.shaded.org.fusesource.leveldbjni.internal.NativeDB;
import org.apache.hadoop.shaded.org.iq80.leveldb.DB;
import org.apache.hadoop.shaded.org.iq80.leveldb.DBException;
import org.apache.hadoop.shaded.org.iq80.leveldb.DBIterator;
import org.apache.hadoop.shaded.org.iq80.leveldb.ReadOptions;
import org.apache.hadoop.shaded.org.iq80.leveldb.WriteBatch;

/**
 * A sorted map in memory, written whole to {@code <dir>/entries} (new file, then an atomic rename)
 * after every change. Enough for a NodeManager's state store in a test (a few applications and
 * containers), not a database.
 */
final class FileBackedDb implements DB {
  private static final String FILE = "entries";

  private final Path file;
  private final TreeMap<byte[], byte[]> entries = new TreeMap<>(Arrays::compareUnsigned);

  private FileBackedDb(Path file) {
    this.file = file;
  }

  static FileBackedDb open(Path dir, boolean create) throws IOException {
    Path file = dir.resolve(FILE);
    FileBackedDb db = new FileBackedDb(file);
    if (Files.exists(file)) {
      try (DataInputStream in = new DataInputStream(Files.newInputStream(file))) {
        int n = in.readInt();
        for (int i = 0; i < n; i++) {
          byte[] k = in.readNBytes(in.readInt());
          db.entries.put(k, in.readNBytes(in.readInt()));
        }
      }
    } else if (!create) {
      // The state store looks for this text to open again with creation on.
      throw new NativeDB.DBException("Invalid argument: " + dir + " does not exist ", true);
    } else {
      Files.createDirectories(dir);
      db.save();
    }
    return db;
  }

  private void save() {
    Path tmp = file.resolveSibling(FILE + ".new");
    try (DataOutputStream out = new DataOutputStream(Files.newOutputStream(tmp))) {
      out.writeInt(entries.size());
      for (Map.Entry<byte[], byte[]> e : entries.entrySet()) {
        out.writeInt(e.getKey().length);
        out.write(e.getKey());
        out.writeInt(e.getValue().length);
        out.write(e.getValue());
      }
    } catch (IOException e) {
      throw new DBException("cannot write " + tmp, e);
    }
    try {
      Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      throw new DBException("cannot replace " + file, new UncheckedIOException(e));
    }
  }

  @Override
  public synchronized byte[] get(byte[] key) {
    return entries.get(key);
  }

  @Override
  public synchronized void put(byte[] key, byte[] value) {
    entries.put(key.clone(), value.clone());
    save();
  }

  @Override
  public synchronized void delete(byte[] key) {
    entries.remove(key);
    save();
  }

  @Override
  public WriteBatch createWriteBatch() {
    return new Batch();
  }

  @Override
  public synchronized void write(WriteBatch batch) {
    for (Runnable change : ((Batch) batch).changes) {
      change.run();
    }
    save();
  }

  @Override
  public synchronized DBIterator iterator() {
    return new Cursor(new ArrayList<>(entries.entrySet()));
  }

  @Override
  public DBIterator iterator(ReadOptions options) {
    return iterator();
  }

  @Override
  public void compactRange(byte[] begin, byte[] end) {}

  @Override
  public void close() {}

  /** Changes recorded for {@link #write}, applied under the store's lock. */
  private final class Batch implements WriteBatch {
    final List<Runnable> changes = new ArrayList<>();

    @Override
    public WriteBatch put(byte[] key, byte[] value) {
      byte[] k = key.clone();
      byte[] v = value.clone();
      changes.add(() -> entries.put(k, v));
      return this;
    }

    @Override
    public WriteBatch delete(byte[] key) {
      byte[] k = key.clone();
      changes.add(() -> entries.remove(k));
      return this;
    }

    @Override
    public void close() {}
  }

  /** A cursor over a copy of the entries; {@code next} is the index of the entry after it. */
  private static final class Cursor implements DBIterator {
    private final List<Map.Entry<byte[], byte[]>> list;
    private int next;

    Cursor(List<Map.Entry<byte[], byte[]>> list) {
      this.list = list;
    }

    @Override
    public void seek(byte[] key) {
      next = 0;
      while (next < list.size() && Arrays.compareUnsigned(list.get(next).getKey(), key) < 0) {
        next++;
      }
    }

    @Override
    public void seekToFirst() {
      next = 0;
    }

    @Override
    public void seekToLast() {
      next = Math.max(0, list.size() - 1);
    }

    @Override
    public boolean hasNext() {
      return next < list.size();
    }

    @Override
    public Map.Entry<byte[], byte[]> next() {
      Map.Entry<byte[], byte[]> e = peekNext();
      next++;
      return e;
    }

    @Override
    public Map.Entry<byte[], byte[]> peekNext() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      Map.Entry<byte[], byte[]> e = list.get(next);
      return new AbstractMap.SimpleImmutableEntry<>(e.getKey(), e.getValue());
    }

    @Override
    public boolean hasPrev() {
      return next > 0;
    }

    @Override
    public Map.Entry<byte[], byte[]> prev() {
      Map.Entry<byte[], byte[]> e = peekPrev();
      next--;
      return e;
    }

    @Override
    public Map.Entry<byte[], byte[]> peekPrev() {
      if (!hasPrev()) {
        throw new NoSuchElementException();
      }
      return list.get(next - 1);
    }

    @Override
    public void close() {}
  }
}
