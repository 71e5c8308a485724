package io.memwire.shuffle.service;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Opens the recovery store a service starts with, or none: with {@code recoveryPath} unset the
 * output directory is emptied (a restarted service serves nothing of its previous run); with it set
 * the store's directory is created private (or checked like the service's other directories) and
 * the store opened. A store that is gone while outputs remain, or that cannot be opened, is lost:
 * logged at WARN, counted, and the service starts empty with a new store.
 */
final class RecoveryStores {
  private static final Logger LOG = LoggerFactory.getLogger(RecoveryStores.class);

  private RecoveryStores() {}

  /**
   * @param log where the service records (the store, or {@link RecoveryLog#NONE})
   * @param store the store to recover from, or null with recovery off
   * @param lost why a previous store was lost, if it was
   */
  record Opened(RecoveryLog log, RocksRecoveryStore store, List<String> lost) {}

  static Opened open(ServiceConfig config, Path apps) throws IOException {
    if (config.recoveryPath().isEmpty()) {
      LOG.info("emptying {}: outputs of a previous run are not served again", apps);
      TrustedPaths.emptyDirectory(apps);
      return new Opened(RecoveryLog.NONE, null, List.of());
    }
    Path path = config.recoveryPath().get();
    String key = ServiceSettings.PREFIX + ServiceSettings.RECOVERY_PATH.name();
    TrustedPaths.prepareDirectory(path, PosixFilePermissions.fromString("rwx------"), key);
    List<String> lost = new ArrayList<>();
    // No CURRENT file: no database there (RocksDB's own marker), so not RocksRecoveryStore's to
    // say: that class is loaded only once RocksDB is known to be on the classpath.
    if (!Files.exists(path.resolve("CURRENT")) && !isEmpty(apps)) {
      lost.add(startEmpty(path, apps, "it is gone (deleted since the last run?)"));
    }
    RocksRecoveryStore store;
    try {
      store = openStore(path);
    } catch (IOException e) {
      lost.add(startEmpty(path, apps, e.getMessage()));
      TrustedPaths.emptyDirectory(path);
      store = openStore(path);
    }
    return new Opened(store, store, lost);
  }

  private static RocksRecoveryStore openStore(Path path) throws IOException {
    try {
      return RocksRecoveryStore.open(path);
    } catch (LinkageError e) {
      throw ServiceStart.missingJars(ServiceSettings.RECOVERY_PATH, "RocksDB", e);
    }
  }

  private static String startEmpty(Path store, Path apps, String why) throws IOException {
    LOG.warn(
        "recovery store in {} is lost: {}; starting empty: readers of the previous run's outputs "
            + "get fetch failures and Spark reruns those map stages",
        store,
        why);
    TrustedPaths.emptyDirectory(apps);
    return why;
  }

  private static boolean isEmpty(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.findAny().isEmpty();
    }
  }
}
