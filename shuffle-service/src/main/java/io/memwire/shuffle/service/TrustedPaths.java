package io.memwire.shuffle.service;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * File system operations of a daemon that other local users talk to, done so that no user can
 * redirect them with links or by swapping directories:
 *
 * <ul>
 *   <li>{@link #lookup} reads the attributes of a file a client names by walking the path one
 *       directory descriptor at a time ({@code openat} with {@code O_NOFOLLOW}); a symbolic link at
 *       any component fails the lookup.
 *   <li>{@link #prepareDirectory} creates or checks the service's own directories: every ancestor
 *       must be owned by root or the service's user and not writable by others (unless sticky, like
 *       {@code /tmp}), and the directory itself must be the service's, never a link.
 *   <li>{@link #deleteTree} deletes relative to open directory descriptors and never follows a
 *       link.
 * </ul>
 */
final class TrustedPaths {
  private static final LinkOption[] NOFOLLOW = {LinkOption.NOFOLLOW_LINKS};

  private TrustedPaths() {}

  /** The uid of this process. */
  static long selfUid() {
    return new com.sun.security.auth.module.UnixSystem().getUid();
  }

  /** The attributes of a file a client named, read without following a link anywhere. */
  static PosixFileAttributes lookup(Path file) throws IOException {
    if (!file.isAbsolute() || !file.normalize().equals(file) || file.getNameCount() == 0) {
      throw new IOException(file + " is not an absolute, normalized path");
    }
    List<SecureDirectoryStream<Path>> open = new ArrayList<>();
    try {
      SecureDirectoryStream<Path> dir = openRoot(file.getRoot());
      open.add(dir);
      for (int i = 0; i < file.getNameCount() - 1; i++) {
        Path name = file.getName(i);
        try {
          dir = dir.newDirectoryStream(name, NOFOLLOW);
        } catch (IOException e) {
          throw new IOException(
              file.getRoot().resolve(file.subpath(0, i + 1))
                  + " is not a directory (a symbolic link, or missing): "
                  + e.getMessage());
        }
        open.add(dir);
      }
      return dir.getFileAttributeView(file.getFileName(), PosixFileAttributeView.class, NOFOLLOW)
          .readAttributes();
    } finally {
      for (SecureDirectoryStream<Path> d : open) {
        closeQuietly(d);
      }
    }
  }

  private static SecureDirectoryStream<Path> openRoot(Path root) throws IOException {
    DirectoryStream<Path> ds = Files.newDirectoryStream(root);
    if (!(ds instanceof SecureDirectoryStream)) {
      closeQuietly(ds);
      throw new IOException(
          "this platform has no openat-based directory access; the shuffle service needs Linux");
    }
    return (SecureDirectoryStream<Path>) ds;
  }

  /**
   * Creates {@code dir} (and missing ancestors, mode 0755) or checks the existing one, so that only
   * this process's user can change what is in it.
   *
   * @param mode the directory's permissions, set after the checks
   * @param key the setting that named the directory, for the error message
   * @throws IOException naming the component and the fix when the path cannot be trusted
   */
  static void prepareDirectory(Path dir, Set<PosixFilePermission> mode, String key)
      throws IOException {
    Path abs = dir.toAbsolutePath().normalize();
    long self = selfUid();
    Path at = abs.getRoot();
    checkTrusted(at, self, false, key, 0);
    for (Path name : abs) {
      Path next = at.resolve(name);
      boolean last = next.equals(abs);
      if (!Files.exists(next, NOFOLLOW)) {
        try {
          Files.createDirectory(
              next,
              PosixFilePermissions.asFileAttribute(
                  last ? mode : PosixFilePermissions.fromString("rwxr-xr-x")));
        } catch (FileAlreadyExistsException raced) {
          // someone created it meanwhile: the checks below decide whether it can be used
        }
      }
      checkTrusted(next, self, last, key, 0);
      at = next;
    }
    Files.setPosixFilePermissions(abs, mode);
  }

  /**
   * Checks one component: owned by root or this user, and not writable by others unless sticky. A
   * link is accepted only on the way to the directory, owned by root, and its target is checked the
   * same way; the directory itself must be this user's and never a link.
   */
  private static void checkTrusted(Path p, long self, boolean own, String key, int depth)
      throws IOException {
    if (depth > 8) {
      throw new IOException(refusal(p, key, "too many levels of symbolic links"));
    }
    int uid = (Integer) Files.getAttribute(p, "unix:uid", NOFOLLOW);
    PosixFileAttributes a = Files.readAttributes(p, PosixFileAttributes.class, NOFOLLOW);
    if (a.isSymbolicLink()) {
      if (own) {
        throw new IOException(refusal(p, key, "it is a symbolic link"));
      }
      if (uid != 0) {
        throw new IOException(
            refusal(p, key, "it is a symbolic link owned by uid " + uid + ", not by root"));
      }
      Path target = p.getParent().resolve(Files.readSymbolicLink(p)).normalize();
      Path walked = target.getRoot();
      checkTrusted(walked, self, false, key, depth + 1);
      for (Path name : target) {
        walked = walked.resolve(name);
        checkTrusted(walked, self, false, key, depth + 1);
      }
      return;
    }
    if (!a.isDirectory()) {
      throw new IOException(refusal(p, key, "it is not a directory"));
    }
    if (own ? uid != self : uid != 0 && uid != self) {
      throw new IOException(
          refusal(
              p,
              key,
              "it belongs to uid "
                  + uid
                  + " ("
                  + a.owner().getName()
                  + "), not to this service's user (uid "
                  + self
                  + ")"
                  + (own ? "" : " or root")));
    }
    Set<PosixFilePermission> perms = a.permissions();
    boolean othersWrite =
        perms.contains(PosixFilePermission.GROUP_WRITE)
            || perms.contains(PosixFilePermission.OTHERS_WRITE);
    if (othersWrite && (own || !sticky(p))) {
      throw new IOException(
          refusal(
              p,
              key,
              "other users may write to it ("
                  + PosixFilePermissions.toString(perms)
                  + (own ? ")" : ", and it is not sticky)")));
    }
  }

  private static boolean sticky(Path p) throws IOException {
    return (((Integer) Files.getAttribute(p, "unix:mode", NOFOLLOW)) & 01000) != 0;
  }

  private static String refusal(Path p, String key, String why) {
    return "refusing to use "
        + p
        + " ("
        + key
        + "): "
        + why
        + "; another local user could control what the shuffle service reads, deletes or "
        + "listens on there. Choose a path whose every directory belongs to root or the "
        + "service's user and is writable by no one else, or remove the foreign entry";
  }

  /** Deletes {@code dir} and everything in it without following any link; missing is fine. */
  static void deleteTree(Path dir) throws IOException {
    Path abs = dir.toAbsolutePath().normalize();
    Path parent = abs.getParent();
    if (parent == null || !Files.exists(abs, NOFOLLOW)) {
      return;
    }
    try (SecureDirectoryStream<Path> p = openDirectory(parent)) {
      deleteEntry(p, abs.getFileName());
    }
  }

  /** Deletes everything inside {@code dir}, never following a link; keeps {@code dir}. */
  static void emptyDirectory(Path dir) throws IOException {
    try (SecureDirectoryStream<Path> d = openDirectory(dir.toAbsolutePath().normalize())) {
      deleteChildren(d);
    }
  }

  /**
   * Deletes everything inside {@code dir} but the files in {@code keep} (and the directories on
   * their way), never following a link; keeps {@code dir}.
   */
  static void emptyDirectoryBut(Path dir, Set<Path> keep) throws IOException {
    Path abs = dir.toAbsolutePath().normalize();
    Set<Path> ways = new java.util.HashSet<>();
    for (Path k : keep) {
      for (Path p = k.getParent(); p != null && p.startsWith(abs); p = p.getParent()) {
        ways.add(p);
      }
    }
    try (SecureDirectoryStream<Path> d = openDirectory(abs)) {
      deleteChildrenBut(d, abs, keep, ways);
    }
  }

  private static void deleteChildrenBut(
      SecureDirectoryStream<Path> d, Path at, Set<Path> keep, Set<Path> ways) throws IOException {
    List<Path> names = new ArrayList<>();
    for (Path entry : d) {
      names.add(entry.getFileName());
    }
    for (Path name : names) {
      Path full = at.resolve(name);
      if (keep.contains(full)) {
        continue;
      }
      if (ways.contains(full)) {
        try (SecureDirectoryStream<Path> child = d.newDirectoryStream(name, NOFOLLOW)) {
          deleteChildrenBut(child, full, keep, ways);
        }
      } else {
        deleteEntry(d, name);
      }
    }
  }

  private static SecureDirectoryStream<Path> openDirectory(Path abs) throws IOException {
    SecureDirectoryStream<Path> d = openRoot(abs.getRoot());
    for (Path name : abs) {
      SecureDirectoryStream<Path> next;
      try {
        next = d.newDirectoryStream(name, NOFOLLOW);
      } finally {
        closeQuietly(d);
      }
      d = next;
    }
    return d;
  }

  private static void deleteChildren(SecureDirectoryStream<Path> d) throws IOException {
    List<Path> names = new ArrayList<>();
    for (Path entry : d) {
      names.add(entry.getFileName());
    }
    for (Path name : names) {
      deleteEntry(d, name);
    }
  }

  private static void deleteEntry(SecureDirectoryStream<Path> parent, Path name)
      throws IOException {
    BasicKind kind;
    try {
      PosixFileAttributes a =
          parent
              .getFileAttributeView(name, PosixFileAttributeView.class, NOFOLLOW)
              .readAttributes();
      kind = a.isDirectory() ? BasicKind.DIRECTORY : BasicKind.OTHER;
    } catch (NoSuchFileException gone) {
      return;
    }
    if (kind == BasicKind.DIRECTORY) {
      try (SecureDirectoryStream<Path> child = parent.newDirectoryStream(name, NOFOLLOW)) {
        deleteChildren(child);
      }
      parent.deleteDirectory(name);
    } else {
      parent.deleteFile(name); // a link is removed itself, never what it points to
    }
  }

  private enum BasicKind {
    DIRECTORY,
    OTHER
  }

  /** The owner of a file's attributes, for messages. */
  static String ownerName(PosixFileAttributes a) {
    UserPrincipal o = a.owner();
    return o == null ? "?" : o.getName();
  }

  private static void closeQuietly(DirectoryStream<?> d) {
    try {
      d.close();
    } catch (IOException ignored) {
      // closing only
    }
  }
}
