package io.memwire.tools.doctor;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.function.Supplier;

/**
 * {@code libdisni}: whether it loads, and whether it has every JNI function the DiSNI classes on
 * the class path call.
 */
final class LibraryCheck {
  private final Supplier<Optional<String>> libraryError;
  private final Supplier<OptionalInt> libraryVersion;
  private final Supplier<Optional<Path>> libraryFile;
  private final VerbsImpact impact;

  LibraryCheck(
      Supplier<Optional<String>> libraryError,
      Supplier<OptionalInt> libraryVersion,
      Supplier<Optional<Path>> libraryFile,
      VerbsImpact impact) {
    this.libraryError = libraryError;
    this.libraryVersion = libraryVersion;
    this.libraryFile = libraryFile;
    this.impact = impact;
  }

  Check run() {
    Optional<String> err = libraryError.get();
    Optional<Path> file = libraryFile.get();
    String where = file.map(f -> " (" + f + ")").orElse("");
    String build =
        "build libdisni from DiSNI 2.1's source (autotools with libibverbs-dev and "
            + "librdmacm-dev) and add its directory to -Djava.library.path or LD_LIBRARY_PATH";
    if (err.isPresent()) {
      return impact.problem(
          "libdisni",
          err.get()
              + (file.isPresent()
                  ? "; a " + NativeLibrary.FILE_NAME + " exists at " + file.get()
                  : "; java.library.path=" + System.getProperty("java.library.path")),
          build);
    }
    OptionalInt v = libraryVersion.get();
    String loaded =
        "libdisni loaded"
            + where
            + ", JNI interface version "
            + (v.isPresent() ? v.getAsInt() : "unknown")
            + " (DiSNI 2.1 expects 32)";
    if (file.isEmpty()) {
      return Check.ok("libdisni", loaded + "; its file was not found, JNI functions not checked");
    }
    Optional<Class<?>> dispatcher = NativeLibrary.dispatcher();
    if (dispatcher.isEmpty()) {
      return Check.ok(
          "libdisni",
          loaded + "; DiSNI's classes are not on the class path, JNI " + "functions not checked");
    }
    java.util.Set<String> expected = NativeLibrary.expectedSymbols(dispatcher.get());
    java.util.Set<String> present;
    try {
      present = NativeLibrary.jniNames(file.get());
    } catch (java.io.IOException e) {
      return Check.ok(
          "libdisni",
          loaded + "; cannot read it to check its JNI functions (" + e.getMessage() + ")");
    }
    String disni = "DiSNI " + NativeLibrary.disniVersion(dispatcher.get().getClassLoader());
    List<String> missing = NativeLibrary.missing(expected, present);
    if (!missing.isEmpty()) {
      return impact.problem(
          "libdisni",
          loaded
              + ", but it lacks "
              + missing.size()
              + " of the "
              + expected.size()
              + " JNI functions "
              + disni
              + " calls (e.g. "
              + missing.get(0).substring(missing.get(0).lastIndexOf('_') + 1)
              + "): it was built "
              + "from another DiSNI version, and verbs calls would fail with UnsatisfiedLinkError",
          build);
    }
    String prefix = "Java_" + NativeLibrary.mangle(NativeLibrary.DISPATCHER) + "_";
    List<String> extra = new ArrayList<>();
    for (String name : NativeLibrary.missing(present, expected)) {
      if (name.startsWith(prefix)) {
        extra.add(name);
      }
    }
    return Check.ok(
        "libdisni",
        loaded
            + "; all "
            + expected.size()
            + " JNI functions of "
            + disni
            + " present"
            + (extra.isEmpty() ? "" : " (plus " + extra.size() + " it does not call)"));
  }
}
