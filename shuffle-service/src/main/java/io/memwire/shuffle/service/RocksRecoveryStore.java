package io.memwire.shuffle.service;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.shuffle.service.RecoveryRecords.AppRecord;
import io.memwire.shuffle.service.RecoveryRecords.OutputRecord;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The recovery store in RocksDB (the only class that touches {@code org.rocksdb}): one database in
 * the directory {@code recoveryPath} names. Writes go through RocksDB's write-ahead log without
 * fsync, so they survive the service being killed (the kernel keeps the file), not a crash of the
 * host, which takes the outputs' page cache with it anyway.
 *
 * <p>A write that fails is logged (WARN, once) and not retried: the output is still served, only
 * not recovered after a restart.
 */
final class RocksRecoveryStore implements RecoveryLog {
  private static final Logger LOG = LoggerFactory.getLogger(RocksRecoveryStore.class);

  /** What a store held when it was opened: the raw entries, decoded by {@link Recovery}. */
  record Entry(byte[] key, byte[] value) {}

  private final RocksDB db;
  private final Options options;
  private final WriteOptions writes;
  private final AtomicBoolean warned = new AtomicBoolean();

  /** Writes and close exclude each other: a write into a closed database would crash the JVM. */
  private final Object lock = new Object();

  @GuardedBy("lock")
  private boolean closed;

  private RocksRecoveryStore(RocksDB db, Options options) {
    this.db = db;
    this.options = options;
    this.writes = new WriteOptions();
  }

  /**
   * Opens (or creates) the database in {@code dir}.
   *
   * @throws IOException when it cannot be opened (corrupt, or not a database); the message says why
   */
  static RocksRecoveryStore open(Path dir) throws IOException {
    RocksDB.loadLibrary();
    Options options = new Options().setCreateIfMissing(true).setParanoidChecks(true);
    try {
      return new RocksRecoveryStore(RocksDB.open(options, dir.toString()), options);
    } catch (RocksDBException e) {
      options.close();
      throw new IOException("cannot open the recovery store in " + dir + ": " + e.getMessage(), e);
    }
  }

  /**
   * Every entry, in key order (applications and outputs).
   *
   * @throws IOException when the database cannot be read through (corrupt blocks)
   */
  List<Entry> entries() throws IOException {
    List<Entry> all = new ArrayList<>();
    try (RocksIterator it = db.newIterator()) {
      for (it.seekToFirst(); it.isValid(); it.next()) {
        all.add(new Entry(it.key(), it.value()));
      }
      it.status();
    } catch (RocksDBException e) {
      throw new IOException("cannot read the recovery store: " + e.getMessage(), e);
    }
    return all;
  }

  /** Deletes one entry (a record that could not be decoded). */
  void delete(byte[] key) {
    write(
        "delete a record",
        b -> {
          b.delete(key);
        });
  }

  @Override
  public boolean enabled() {
    return true;
  }

  @Override
  public void outputTaken(AppRecord app, OutputRecord output) {
    write(
        "record output " + output.mapId(),
        b -> {
          b.put(RecoveryRecords.appKey(app.user(), app.id()), RecoveryRecords.encode(app));
          b.put(RecoveryRecords.outputKey(output), RecoveryRecords.encode(output));
        });
  }

  @Override
  public void outputDropped(OutputRecord output) {
    write("forget output " + output.mapId(), b -> b.delete(RecoveryRecords.outputKey(output)));
  }

  @Override
  public void shuffleRemoved(String user, String appId, int shuffleId) {
    byte[] from = RecoveryRecords.outputsOf(user, appId, shuffleId);
    write(
        "forget shuffle " + shuffleId + " of " + appId,
        b -> b.deleteRange(from, RecoveryRecords.rangeEnd(from)));
  }

  @Override
  public void applicationEnded(String user, String appId) {
    byte[] from = RecoveryRecords.outputsOf(user, appId);
    write(
        "forget application " + appId,
        b -> {
          b.delete(RecoveryRecords.appKey(user, appId));
          b.deleteRange(from, RecoveryRecords.rangeEnd(from));
        });
  }

  private interface Batch {
    void fill(WriteBatch b) throws RocksDBException;
  }

  private void write(String what, Batch batch) {
    try (WriteBatch b = new WriteBatch()) {
      batch.fill(b);
      synchronized (lock) {
        if (closed) {
          return; // the service stopped: what is recorded stays as it was
        }
        db.write(writes, b);
      }
    } catch (RocksDBException | RuntimeException e) {
      if (warned.compareAndSet(false, true)) {
        LOG.warn(
            "recovery store: cannot {}: {}; what it misses is not recovered after a restart "
                + "(logged once)",
            what,
            e.toString());
      }
    }
  }

  @Override
  public void close() {
    synchronized (lock) {
      if (closed) {
        return;
      }
      closed = true;
      try {
        db.syncWal();
      } catch (RocksDBException e) {
        LOG.warn("recovery store: cannot sync its log at close: {}", e.toString());
      }
      db.close();
      writes.close();
      options.close();
    }
  }
}
