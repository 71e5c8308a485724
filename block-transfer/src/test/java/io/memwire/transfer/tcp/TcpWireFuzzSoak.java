package io.memwire.transfer.tcp;

import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.lifecycle.AfterContainer;

/**
 * Fuzzing of the tcp wire decoders (see {@link TcpWireFuzzing}). The long run, random seeds: {@code
 * mvn -B -o -pl block-transfer verify -Pfuzz} (not in the default suite).
 */
class TcpWireFuzzSoak extends TcpWireFuzzing {

  @AfterContainer
  static void nodeStillServesAReader() throws Exception {
    try {
      assertServesAReader();
    } finally {
      stop();
    }
  }

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

  @Provide
  Arbitrary<List<long[]>> rareFlips() {
    return Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(5, Arbitraries.just(List.of())),
        net.jqwik.api.Tuple.of(1, mutations()));
  }

  @Provide
  Arbitrary<Boolean> magic() {
    return Arbitraries.frequency(
        net.jqwik.api.Tuple.of(1, true), net.jqwik.api.Tuple.of(15, false));
  }

  @Provide
  Arbitrary<Short> version() {
    return Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(15, Arbitraries.just((short) 1)),
        net.jqwik.api.Tuple.of(1, Arbitraries.shorts()));
  }

  @Provide
  Arbitrary<List<Frame>> frameLists() {
    return frames().list().ofMaxSize(24);
  }

  @Provide
  Arbitrary<List<long[]>> flips() {
    return mutations();
  }

  @Provide
  Arbitrary<Long> splits() {
    return Arbitraries.longs().between(0, Long.MAX_VALUE);
  }
}
