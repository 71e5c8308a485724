package io.memwire.shuffle.service;

import io.memwire.shuffle.service.RecoveryRecords.AppRecord;
import io.memwire.shuffle.service.RecoveryRecords.OutputRecord;
import java.io.IOException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.UserPrincipal;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Takes back, at start and before anyone is served, the outputs a previous run of the service
 * recorded ({@link RocksRecoveryStore}): each application with its token, driver and directory,
 * then each output whose files pass the same checks as at intake, looked up without following a
 * link: the recorded inode (device and number) under the service's own name, unchanged in size and
 * modification time, still a regular file of the application's user, and an index that still fits
 * its data. Those are registered again (new region keys) and published in a new directory; every
 * other recorded output is dropped and counted by reason (its readers get a fetch failure, never
 * other bytes), and every file of the output directory no output was taken back for is deleted.
 */
final class Recovery {
  private static final Logger LOG = LoggerFactory.getLogger(Recovery.class);

  /** A link's name: {@code shuffle_S_M_0-N.index} or {@code .data}, N the link id. */
  private static final Pattern LINK = Pattern.compile("shuffle_\\d+_\\d+_0-(\\d+)\\.(index|data)");

  /** An application's directory name: its id, "@", its user's name made safe, maybe "-N". */
  private static final Pattern APP_DIR = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._@-]{0,300}");

  private final RocksRecoveryStore store;
  private final Path appsDir;
  private final Applications applications;
  private final OutputIntake intake;
  private final ServiceCounters counters;
  private final AtomicLong linkIds;
  private final Map<String, Application> adopted = new HashMap<>();
  private final Map<Application, Integer> outputsOf = new HashMap<>();
  private final Set<Path> keep = new HashSet<>();

  Recovery(
      RocksRecoveryStore store,
      Path appsDir,
      Applications applications,
      OutputIntake intake,
      ServiceCounters counters,
      AtomicLong linkIds) {
    this.store = store;
    this.appsDir = appsDir;
    this.applications = applications;
    this.intake = intake;
    this.counters = counters;
    this.linkIds = linkIds;
  }

  /**
   * Takes back what the store records; deletes every other file of the output directory.
   *
   * @throws IOException when the store cannot be read through (then nothing was taken back)
   */
  void run() throws IOException {
    var entries = store.entries();
    for (var e : entries) {
      if (RecoveryRecords.isApp(e.key())) {
        adoptApplication(e);
      }
    }
    long recovered = 0;
    long dropped = 0;
    for (var e : entries) {
      if (!RecoveryRecords.isApp(e.key())) {
        String why = adoptOutput(e);
        if (why == null) {
          recovered++;
        } else {
          dropped++;
          counters.dropped(why);
          store.delete(e.key());
        }
      }
    }
    counters.outputsRecovered.add(recovered);
    for (Application a : adopted.values()) {
      if (!outputsOf.containsKey(a)) {
        applications.end(a, "not recovered: none of its map outputs could be taken back");
      }
    }
    TrustedPaths.emptyDirectoryBut(appsDir, keep);
    LOG.info(
        "recovery: {} map outputs of {} applications taken back, {} dropped; nothing else of the "
            + "previous run is kept",
        recovered,
        outputsOf.size(),
        dropped);
  }

  private void adoptApplication(RocksRecoveryStore.Entry e) {
    AppRecord r;
    try {
      r = RecoveryRecords.decodeApp(e.value());
    } catch (IOException ex) {
      LOG.warn("recovery: dropping an unreadable application record: {}", ex.getMessage());
      store.delete(e.key());
      return;
    }
    if (!ClientSession.ID.matcher(r.id()).matches()
        || !APP_DIR.matcher(r.dirName()).matches()
        || r.token().length < 16) {
      LOG.warn("recovery: dropping the record of application {}: not valid", r.id());
      store.delete(e.key());
      return;
    }
    UserPrincipal user;
    try {
      user =
          FileSystems.getDefault().getUserPrincipalLookupService().lookupPrincipalByName(r.user());
    } catch (IOException ex) {
      LOG.warn("recovery: not recovering {}: no user {} any more", r.id(), r.user());
      return;
    }
    Application a = applications.adopt(user, r);
    if (a != null) {
      adopted.put(r.user() + "\0" + r.id(), a);
    }
  }

  /** Takes one output back; returns why not (a reason of RECOVERY_DROPS), or null. */
  private String adoptOutput(RocksRecoveryStore.Entry e) {
    OutputRecord r;
    try {
      r = RecoveryRecords.decodeOutput(e.value());
    } catch (IOException ex) {
      return "corrupt";
    }
    Application app = adopted.get(r.user() + "\0" + r.appId());
    if (app == null) {
      return "application";
    }
    Matcher index = LINK.matcher(r.indexName());
    Matcher data = LINK.matcher(r.dataName());
    boolean hasData = !r.dataName().isEmpty();
    if (!ClientSession.ID.matcher(r.executor()).matches()
        || !index.matches()
        || !index.group(2).equals("index")
        || hasData && (!data.matches() || !data.group(2).equals("data"))
        || hasData != (r.dataCheck() != null)
        || r.indexCheck() == null) {
      return "corrupt";
    }
    // Normalized: the walk without links takes only normalized paths, and so does the cleanup.
    Path dir = app.dir.resolve(r.executor()).toAbsolutePath().normalize();
    Path indexPath = dir.resolve(r.indexName());
    Path dataPath = hasData ? dir.resolve(r.dataName()) : null;
    String why = check(indexPath, r.indexCheck(), r.indexLength(), app.key.user());
    if (why == null && hasData) {
      why = check(dataPath, r.dataCheck(), r.dataLength(), app.key.user());
    }
    if (why == null) {
      try {
        OutputFiles.checkIndex(indexPath, hasData ? r.dataLength() : 0);
      } catch (IOException | OutputFiles.OutputRefused ex) {
        why = "changed";
      }
    }
    if (why != null) {
      LOG.debug("recovery: map output {} of {} dropped: {}", r.mapId(), app.key, why);
      return why;
    }
    OutputFiles.Linked linked =
        new OutputFiles.Linked(
            indexPath,
            dataPath,
            r.indexLength(),
            hasData ? r.dataLength() : 0,
            r.indexCheck(),
            r.dataCheck());
    why = intake.adopt(app, r, linked);
    if (why != null) {
      return why;
    }
    keep.add(indexPath);
    if (dataPath != null) {
      keep.add(dataPath);
    }
    outputsOf.merge(app, 1, Integer::sum);
    long id = Long.parseLong(index.group(1));
    linkIds.accumulateAndGet(id, Math::max); // new links never take a kept link's name
    if (hasData) {
      linkIds.accumulateAndGet(Long.parseLong(data.group(1)), Math::max);
    }
    return null;
  }

  /**
   * The same checks as at intake, through a walk that follows no link: the recorded inode, size and
   * time, a regular file of {@code owner}.
   */
  private static String check(Path file, FileCheck recorded, long length, UserPrincipal owner) {
    PosixFileAttributes a;
    try {
      a = TrustedPaths.lookup(file);
    } catch (IOException ex) {
      return Files.exists(file, LinkOption.NOFOLLOW_LINKS) ? "changed" : "missing";
    }
    if (!a.isRegularFile()
        || !owner.equals(a.owner())
        || a.size() != length
        || !recorded.sameAs(FileCheck.of(a))) {
      return "changed";
    }
    return null;
  }
}
