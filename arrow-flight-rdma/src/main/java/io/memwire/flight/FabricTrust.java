package io.memwire.flight;

import io.memwire.transfer.ProviderKind;

/**
 * Whether a producer's RDMA data plane may serve over a provider. The tcp responder enforces every
 * lease's key and bounds itself; verbs regions share the node's protection domain and real devices
 * hand out guessable rkeys, so any connected peer could read a live lease: verbs serves only where
 * the fabric's peers are trusted. So does ucx: its RDMA keys are the device's, and UCX's software
 * GET (tcp, shared memory) checks no key at all.
 */
final class FabricTrust {
  private FabricTrust() {}

  /**
   * Why the data plane must not serve with {@code provider}, or null when it may ({@code
   * trustedFabric}: {@link FlightSettings#TRUSTED_FABRIC}).
   */
  static String refusal(ProviderKind provider, boolean trustedFabric) {
    if ((provider == ProviderKind.VERBS || provider == ProviderKind.UCX) && !trustedFabric) {
      return "provider "
          + provider
          + " cannot keep one client from reading another's leased batches "
          + "(set "
          + FlightSettings.TRUSTED_FABRIC.name(FlightSettings.SERVER_PREFIX)
          + "=true if every peer on the fabric is trusted)";
    }
    return null;
  }
}
