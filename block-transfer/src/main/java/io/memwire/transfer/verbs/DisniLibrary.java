package io.memwire.transfer.verbs;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import com.ibm.disni.verbs.RdmaProvider;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * Whether DiSNI's native library (libdisni) can be loaded, and its JNI interface version. DiSNI
 * loads it in a static initializer that, once failed, leaves its classes unusable for the life of
 * the JVM; this class loads it first and remembers the outcome, so a missing library is a clear
 * message, not a {@code NoClassDefFoundError}.
 */
public final class DisniLibrary {
  @GuardedBy("DisniLibrary.class")
  private static String loadError;

  @GuardedBy("DisniLibrary.class")
  private static int version = -1;

  @GuardedBy("DisniLibrary.class")
  private static boolean tried;

  private DisniLibrary() {}

  /** Why libdisni cannot be used, or empty when it can. */
  public static synchronized Optional<String> loadError() {
    if (!tried) {
      tried = true;
      try {
        System.loadLibrary("disni");
      } catch (UnsatisfiedLinkError | SecurityException e) {
        loadError = "libdisni is not loadable (" + e.getMessage() + ")";
        return Optional.of(loadError);
      }
      try {
        version = RdmaProvider.provider().getVersion();
      } catch (Throwable e) { // IOException on a version mismatch, LinkageError on a broken .so
        loadError = "libdisni loaded but DiSNI cannot use it: " + e;
      }
    }
    return Optional.ofNullable(loadError);
  }

  /** The JNI interface version libdisni reports (DiSNI 2.1 needs 32), when loadable. */
  public static synchronized OptionalInt version() {
    return loadError().isPresent() || version < 0 ? OptionalInt.empty() : OptionalInt.of(version);
  }
}
