package io.memwire.transfer.tcp;

import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.Size;

/**
 * Fuzzing of the tcp wire decoders (see {@link TcpWireFuzzing}). The default-suite run: a fixed
 * seed and modest tries, so it is fast and repeatable.
 */
class TcpWireFuzzTest extends TcpWireFuzzing {

  @Property(tries = 150, seed = "20261201")
  void requestStreamsGetTheModelsAnswers(
      @ForAll("magic") boolean badMagic,
      @ForAll("version") short version,
      @ForAll short flags,
      @ForAll("frameLists") List<Frame> frames,
      @ForAll("flips") List<long[]> mutations,
      @ForAll("splits") long split)
      throws Exception {
    checkStream(badMagic, version, flags, frames, mutations, split);
  }

  @Property(tries = 60, seed = "20261202")
  void onlyTheRightProofAuthenticates(
      @ForAll boolean clientFlag, @ForAll("flips") List<long[]> proofMutations) throws Exception {
    checkAuth(clientFlag, proofMutations);
  }

  @Property(tries = 60, seed = "20261202")
  void garbageIsClosedAndTheNodeKeepsServing(@ForAll @Size(max = 300) byte[] garbage)
      throws Exception {
    checkGarbage(garbage);
  }

  @Property(tries = 60, seed = "20261203")
  void theReaderDecodesMangledResponsesSafely(
      @ForAll @net.jqwik.api.constraints.IntRange(min = 1, max = 12) int reads,
      @ForAll("rareFlips") List<long[]> handshakeFlips,
      @ForAll("flips") List<long[]> headerFlips,
      @ForAll("splits") long cutPoint,
      @ForAll boolean cut)
      throws Exception {
    checkClient(reads, handshakeFlips, headerFlips, cutPoint, cut);
  }
}
