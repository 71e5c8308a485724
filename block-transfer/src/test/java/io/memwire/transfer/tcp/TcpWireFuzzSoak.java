package io.memwire.transfer.tcp;

import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.Size;

/**
 * Fuzzing of the tcp wire decoders (see {@link TcpWireFuzzing}). The long run, random seeds: {@code
 * mvn -B -o -pl block-transfer verify -Pfuzz} (not in the default suite).
 */
class TcpWireFuzzSoak extends TcpWireFuzzing {

  @Property(tries = 5000)
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

  @Property(tries = 1000)
  void onlyTheRightProofAuthenticates(
      @ForAll boolean clientFlag, @ForAll("flips") List<long[]> proofMutations) throws Exception {
    checkAuth(clientFlag, proofMutations);
  }

  @Property(tries = 1000)
  void garbageIsClosedAndTheNodeKeepsServing(@ForAll @Size(max = 300) byte[] garbage)
      throws Exception {
    checkGarbage(garbage);
  }

  @Property(tries = 1000)
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
