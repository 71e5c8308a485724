package io.memwire.shuffle.service;

import io.memwire.shuffle.service.RecoveryRecords.AppRecord;
import io.memwire.shuffle.service.RecoveryRecords.OutputRecord;

/**
 * Where the service records what it owns, so a restarted service can take it back ({@link
 * Recovery}). Written when an output is taken, replaced or removed and when an application ends;
 * never on the read path. Thread-safe. {@link #NONE} when recovery is off ({@code recoveryPath}
 * unset): the service then never loads the store's classes.
 */
interface RecoveryLog extends AutoCloseable {
  /** Records nothing: a restarted service starts empty. */
  RecoveryLog NONE =
      new RecoveryLog() {
        @Override
        public boolean enabled() {
          return false;
        }

        @Override
        public void outputTaken(AppRecord app, OutputRecord output) {}

        @Override
        public void outputDropped(OutputRecord output) {}

        @Override
        public void shuffleRemoved(String user, String appId, int shuffleId) {}

        @Override
        public void applicationEnded(String user, String appId) {}

        @Override
        public void close() {}
      };

  /** True when outputs are recorded (and kept on disk when the service stops). */
  boolean enabled();

  /** An output is held now (replacing what its slot held): its application and it are recorded. */
  void outputTaken(AppRecord app, OutputRecord output);

  /** An output is no longer held. */
  void outputDropped(OutputRecord output);

  /** One shuffle's outputs of an application are no longer held. */
  void shuffleRemoved(String user, String appId, int shuffleId);

  /** An application and all its outputs are no longer held. */
  void applicationEnded(String user, String appId);

  @Override
  void close();
}
