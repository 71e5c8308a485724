package io.memwire.tools.doctor;

import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.verbs.MemlockLimit;
import java.nio.file.Path;
import java.util.Optional;

/** {@code memlock}: the locked-memory limit against the registration budget. */
final class MemlockCheck {
  private final TransferConfig config;
  private final Path limitsFile;
  private final VerbsImpact impact;

  MemlockCheck(TransferConfig config, Path limitsFile, VerbsImpact impact) {
    this.config = config;
    this.limitsFile = limitsFile;
    this.impact = impact;
  }

  Check run() {
    Optional<MemlockLimit> m = MemlockLimit.read(limitsFile);
    long budget = config.registrationBudget();
    if (m.isEmpty()) {
      // The verbs probe passes without it: the node starts, registrations may fail later.
      return impact.advisory(
          "memlock",
          "cannot read the locked-memory limit from "
              + limitsFile
              + "; registrations fail if it is below "
              + TransferConfig.REGISTRATION_BUDGET
              + "="
              + budget,
          "check `ulimit -l`: it must cover " + TransferConfig.REGISTRATION_BUDGET + "=" + budget);
    }
    if (m.get().allows(budget)) {
      return Check.ok(
          "memlock",
          "ulimit -l is "
              + m.get().describeSoft()
              + ", covers "
              + TransferConfig.REGISTRATION_BUDGET
              + "="
              + budget);
    }
    return impact.problem(
        "memlock",
        "ulimit -l is "
            + m.get().describeSoft()
            + ", below "
            + TransferConfig.REGISTRATION_BUDGET
            + "="
            + budget,
        "raise memlock (limits.conf `* - memlock unlimited`, "
            + "systemd LimitMEMLOCK=infinity, docker --ulimit memlock=-1) or lower "
            + TransferConfig.REGISTRATION_BUDGET);
  }
}
