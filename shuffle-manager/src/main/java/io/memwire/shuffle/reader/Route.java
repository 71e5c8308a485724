package io.memwire.shuffle.reader;

import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.transfer.ProviderKind;

/**
 * Where a map output's directory slot is: its directory chunk ({@code pointer}) and its map index.
 * Also the key under which an executor keeps what it learned of that output ({@link
 * MapOutputCache}).
 */
public record Route(DirectoryPointer pointer, int mapIndex) {
  /** The provider the map output's executor serves it over. */
  ProviderKind provider() {
    return pointer.region().segments().get(0).provider();
  }

  /** The same map index in the chunk that replaced this one. */
  Route movedTo(DirectoryPointer now) {
    return new Route(now, mapIndex);
  }
}
