package sdm_test

// An engine's loader through Go (ABI 1.5): unmount, the footprint report and background warm-up,
// on the fake driver.

import (
	"os"
	"testing"
	"time"

	sdm "github.com/sdm/sdm/bindings/go"
)

func TestUnmountAndFootprint(t *testing.T) {
	rt := newRuntime(t, nil)
	bytes, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.MountMemory(bytes, "from memory"); err != nil {
		t.Fatal(err)
	}
	before, err := rt.Footprint()
	if err != nil || before.ArchiveMemoryBytes < uint64(len(bytes)) || before.ModuleCount != 0 {
		t.Fatalf("before a fetch: %+v, %v", before, err)
	}
	k, err := rt.Kernel(0, "scale")
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := rt.Footprint()
	if err != nil || loaded.ModuleCount != 1 || loaded.DeviceBytes == 0 {
		t.Fatalf("after a fetch: %+v, %v", loaded, err)
	}
	_, err = rt.Unmount("elsewhere")
	sdmError(t, err, sdm.ErrNotFound, "elsewhere")
	_, err = rt.Unmount("from memory\x00, not this one")
	sdmError(t, err, sdm.ErrInvalidArgument, "NUL")
	_, err = rt.PreloadAsync(0, 0, "scale\x00")
	sdmError(t, err, sdm.ErrInvalidArgument, "NUL")
	if n, err := rt.Unmount("from memory"); err != nil || n != 1 {
		t.Fatalf("unmount: %d, %v", n, err)
	}
	if archives, err := rt.Archives(); err != nil || len(archives) != 0 {
		t.Fatalf("after unmounting: %v, %v", archives, err)
	}
	if err := k.Release(); err != nil { // the unmounted archive's module goes with its last reference
		t.Fatal(err)
	}
	if after, err := rt.Footprint(); err != nil || after.ModuleCount != 0 {
		t.Fatalf("after the release: %+v, %v", after, err)
	}
}

func TestPreloadAsync(t *testing.T) {
	rt := newRuntime(t, nil)
	if err := rt.MountFile(golden); err != nil {
		t.Fatal(err)
	}
	w, err := rt.PreloadAsync(0, 2, "scale")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(time.Minute); err != nil {
		t.Fatal(err)
	}
	if done, total, err := w.Progress(); err != nil || total == 0 || done != total {
		t.Fatalf("progress: %d of %d, %v", done, total, err)
	}
	if err := w.Wait(0); err != nil { // the outcome again
		t.Fatal(err)
	}
	if err := w.Cancel(); err != nil { // finished: nothing changes
		t.Fatal(err)
	}
	w.Close()
	w.Close()
	sdmError(t, w.Wait(0), sdm.ErrInvalidArgument, "closed")

	failing, err := rt.PreloadAsync(0, 0, "nonexistent")
	if err != nil {
		t.Fatal(err)
	}
	sdmError(t, failing.Wait(time.Minute), sdm.ErrNotFound, "nonexistent")
	failing.Close()

	// A runtime of its own, closed here: the warm-up outlives it and still answers.
	own, err := sdm.NewRuntime(&sdm.Options{CUDADriver: driver, NoEmbeddedArchive: true, LogLevel: sdm.LogOff, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := own.MountFile(golden); err != nil {
		t.Fatal(err)
	}
	everything, err := own.PreloadAsync(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := everything.Wait(time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := own.Close(); err != nil {
		t.Fatal(err)
	}
	if err := everything.Wait(0); err != nil {
		t.Fatal(err)
	}
	everything.Close()
	_, err = own.PreloadAsync(0, 0)
	sdmError(t, err, sdm.ErrInvalidArgument, "closed")
}

func TestDeviceMemoryBudget(t *testing.T) {
	// Two modules fetched, with no budget and with one of one byte: under it the first is evicted
	// when the second loads (the footprint holds fewer device bytes), and its handle still works.
	held := func(budget uint64) uint64 {
		rt := newRuntime(t, &sdm.Options{CUDADriver: driver, NoEmbeddedArchive: true, LogLevel: sdm.LogOff, DeviceMemoryBudget: budget})
		if err := rt.MountFile(golden); err != nil {
			t.Fatal(err)
		}
		if err := rt.MountFile(launchArchive(t)); err != nil {
			t.Fatal(err)
		}
		first, err := rt.Kernel(0, "scale")
		if err != nil {
			t.Fatal(err)
		}
		defer first.Release()
		kernels, err := rt.Kernels(sdm.ListServed)
		if err != nil {
			t.Fatal(err)
		}
		loaded := 0
		for _, k := range kernels {
			if k.Module == "launch" && loaded == 0 {
				other, err := rt.Kernel(0, sdm.QualifiedName(k.Module, k.Name))
				if err != nil {
					t.Fatal(err)
				}
				defer other.Release()
				loaded++
			}
		}
		if loaded == 0 {
			t.Fatal("no kernel of the module launch is served")
		}
		f, err := rt.Footprint()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := first.Attributes(); err != nil { // under the budget its module reloads here
			t.Fatal(err)
		}
		return f.DeviceBytes
	}
	if all, budgeted := held(0), held(1); budgeted == 0 || budgeted >= all {
		t.Fatalf("device bytes held: %d with no budget, %d under a 1-byte budget", all, budgeted)
	}
}
