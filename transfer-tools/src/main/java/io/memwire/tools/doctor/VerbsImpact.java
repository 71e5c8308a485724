package io.memwire.tools.doctor;

import io.memwire.transfer.ProviderKind;

/**
 * How a finding about the host's verbs support counts, given the configured provider: a problem
 * that makes the verbs probe fail, or an advisory about how well verbs will run.
 */
final class VerbsImpact {
  private final ProviderKind provider;

  VerbsImpact(ProviderKind provider) {
    this.provider = provider;
  }

  /**
   * A problem that makes the verbs probe fail: FAIL with {@code provider=verbs} (the node refuses
   * to start), WARN with {@code auto} (it runs on tcp), OK with {@code tcp} or {@code ucx} (not
   * used). The finding says which of these happens.
   */
  Check problem(String name, String finding, String advice) {
    switch (provider) {
      case TCP:
      case UCX:
        return Check.ok(name, finding + " (not needed: provider=" + provider + ")");
      case VERBS:
        return Check.fail(
            name, finding + "; a node with provider=verbs will refuse to start", advice);
      default:
        return Check.warn(name, finding + "; provider=auto will fall back to tcp", advice);
    }
  }

  /** Verbs still runs, but not as well or not everywhere: WARN, or OK with provider=tcp. */
  Check advisory(String name, String finding, String advice) {
    if (provider == ProviderKind.TCP || provider == ProviderKind.UCX) {
      return Check.ok(name, finding + " (not used: provider=" + provider + ")");
    }
    return Check.warn(name, finding, advice);
  }
}
