package org.apache.hadoop.shaded.org.iq80.leveldb;

/** How to open a {@link DB}: only whether to create a missing one. */
public class Options {
  private boolean createIfMissing = true;

  /** Whether opening creates a missing store. */
  public boolean createIfMissing() {
    return createIfMissing;
  }

  /** Sets whether opening creates a missing store; returns this. */
  public Options createIfMissing(boolean create) {
    this.createIfMissing = create;
    return this;
  }
}
