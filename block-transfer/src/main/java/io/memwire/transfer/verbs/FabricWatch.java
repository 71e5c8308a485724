package io.memwire.transfer.verbs;

import io.memwire.transfer.fabric.CounterSample;
import io.memwire.transfer.fabric.FabricDiagnosis;
import io.memwire.transfer.fabric.NicCounters;
import java.util.List;
import java.util.OptionalInt;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The bound port's NIC counters for the provider's own errors: a connect or read that stalls is
 * explained by what the counters did meanwhile ({@link FabricDiagnosis}: an MTU mismatch, UDP 4791
 * unreachable, retransmissions), so its error names the cause instead of a bare timeout. A sample
 * reads a few sysfs files; a counter that cannot be read only makes the explanation empty.
 */
final class FabricWatch {
  private static final Logger LOG = LoggerFactory.getLogger(VerbsProvider.class);

  private final NicCounters counters;
  private final String device;
  private final int port;
  private final VerbsProbe.Binding binding;

  FabricWatch(NicCounters counters, VerbsProbe.Binding binding) {
    this.counters = counters;
    this.device = binding.device().name();
    this.port = binding.port().number();
    this.binding = binding;
  }

  /** The bound device's counters now, or null when they cannot be read. */
  CounterSample sample() {
    try {
      return counters.sample(List.of(device));
    } catch (RuntimeException e) {
      LOG.debug("cannot read the NIC counters of {}: {}", device, e.toString());
      return null;
    }
  }

  /**
   * {@code "; "} and the fabric cause the counters show since {@code since}, or "" when they show
   * none (or {@code since} is null). {@code peerMtu} is the serving peer's active MTU as its
   * handshake told it, so an MTU mismatch names both ends'.
   */
  String explain(CounterSample since, boolean stalled, OptionalInt peerMtu) {
    CounterSample now = since == null ? null : sample();
    if (now == null) {
      return "";
    }
    try {
      FabricDiagnosis.Finding f =
          FabricDiagnosis.diagnose(
              now.since(since), device, port, PortMtu.of(binding).active(), peerMtu, stalled);
      return f.found() ? "; " + f.message() : "";
    } catch (RuntimeException e) { // an explanation never replaces the error it explains
      LOG.debug("cannot diagnose the NIC counters of {}: {}", device, e.toString());
      return "";
    }
  }
}
