package io.memwire.transfer.verbs;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A failed registration (memlock too small for what is pinned) names the limit in effect, the
 * setting it must cover and both fixes.
 */
class MemlockPinFailureTest {
  @TempDir Path tmp;

  @Test
  void namesTheLimitTheBudgetAndTheFixes() throws Exception {
    Path limits = tmp.resolve("limits");
    Files.writeString(
        limits,
        "Limit                     Soft Limit           Hard Limit           Units\n"
            + "Max locked memory         65536                65536                bytes\n");
    String m =
        MemlockLimit.pinFailure(
            1 << 20, "rxe0", "Cannot allocate memory", MemlockLimit.read(limits), 256L << 20);
    assertTrue(
        m.startsWith("ibv_reg_mr of 1048576 bytes failed on rxe0: Cannot allocate memory"), m);
    assertTrue(m.contains("memlock limit (ulimit -l), now 65536 bytes (64 KiB)"), m);
    assertTrue(m.contains("must cover registrationBudget=268435456 bytes"), m);
    assertTrue(m.contains("raise memlock (limits.conf, systemd LimitMEMLOCK)"), m);
    assertTrue(m.contains("or lower registrationBudget"), m);
  }

  @Test
  void anUnreadableLimitIsSaidUnknown() {
    String m = MemlockLimit.pinFailure(4096, "mlx5_0", "err", Optional.empty(), 1L << 30);
    assertTrue(m.contains("now unknown"), m);
  }
}
